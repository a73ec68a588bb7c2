# fuzz.sh - sourced by the suite's bounded fuzz runs (tests/cli/fuzz_*.sh),
# after lib/common.sh: skipping when libFuzzer is absent, building a target.

# Exits the test as skipped (reported, not failed) when clang cannot link a
# libFuzzer target; $1 is a scratch folder.
fuzz_require_libfuzzer() {
    if ! command -v clang >/dev/null 2>&1 ||
        ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }\n' |
        clang -x c -fsanitize=fuzzer -o "$1/probe" - >/dev/null 2>&1; then
        echo "skipped: clang with libFuzzer (-fsanitize=fuzzer) is not available"
        echo "0 passed, 0 failed"
        exit 0
    fi
}

# Builds build/fuzz/$1 (a check of its own); on failure shows the build's
# tail and ends the test. $2 is a scratch folder.
fuzz_build() {
    if make -s "build/fuzz/$1" >"$2/build.log" 2>&1; then
        ok "build $1"
    else
        tail -n 20 "$2/build.log"
        bad "build $1"
        finish
        exit 1
    fi
}
