#!/usr/bin/env bash
# What Android does to a process, reproduced on Linux x86 (issue 37): a
# streamed run gives the same greedy text
#  - under a seccomp filter that refuses io_uring_setup, or io_uring_enter
#    alone, with SIGSYS (SECCOMP_RET_TRAP, Android's way), by killing the
#    process (SECCOMP_RET_KILL_PROCESS) or with EPERM: io_uring is found
#    unavailable by the probe process (src/io/io_ring_probe.c), one note line
#    says why, and pread lanes read (tests/tools/seccomp_wrap.c installs the
#    filter; skipped where the build has no liburing or a filter cannot be
#    installed, e.g. under qemu-user, which refuses a guest's filter);
#  - with the model on tmpfs (/dev/shm, where O_DIRECT is not trusted):
#    one note line names the file system, buffered reads;
#  - with RLIMIT_MEMLOCK at 64 KiB (Android's cap): nothing depends on mlock;
#  - serve --host with a host name: refused in one line (no lookups).
set -u
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-phone-XXXXXX")
trap 'rm -rf "$work"; rm -f "${shm_model:-}"' EXIT

M=$work/tiny.gguf
if ! "$SLUICE" mkmodel --arch qwen3moe --preset tiny --seed 9 -q -o "$M"; then
    bad "mkmodel"
    finish
    exit 1
fi
P="The miller's daughter kept a notebook."
run() { # run OUT MODEL ARGS... (prefix with a wrapper through $WRAP)
    local out=$1 model=$2
    shift 2
    ${WRAP:-} "$SLUICE" run -m "$model" -p "$P" -n 12 --temp 0 --ignore-eos --moe-stream \
        --cache-experts 2 "$@" >"$out" 2>"$out.err"
}
run "$work/ref" "$M" --io-backend pread
check "the reference streamed run" [ -s "$work/ref" ]

# --- seccomp: io_uring refused ------------------------------------------------------------
wrap=${SECCOMP_WRAP:-$(dirname "${SLUICE_REL:-build/rel/sluice}")/tools/seccomp_wrap}
if [ ! -x "$wrap" ]; then
    wrap=$work/seccomp_wrap
    ${CC:-cc} -std=c11 -O2 -o "$wrap" tests/tools/seccomp_wrap.c || bad "building seccomp_wrap"
fi
run "$work/uring" "$M" --io-backend uring --stats
if ! grep -q "I/O io_uring" "$work/uring.err"; then
    echo "   (this build or kernel has no io_uring: the seccomp cases are skipped)"
elif "$wrap" trap io_uring_setup true; [ $? -eq 3 ]; then
    echo "   (a seccomp filter cannot be installed here: the seccomp cases are skipped)"
else
    check "io_uring streams the same text" same_text "$work/ref" "$work/uring"
    for action in trap kill errno; do
        for call in io_uring_setup io_uring_enter; do
            out=$work/$action-$call
            # a plain error from set-up is the ring's own report
            named=$call
            [ "$action-$call" = errno-io_uring_setup ] && named="io_uring_queue_init.*not permitted"
            WRAP="$wrap $action $call" run "$out" "$M" --io-backend uring --stats
            rc=$?
            check "seccomp $action on $call: exit 0 ($rc), the same text" \
                sh -c "[ $rc -eq 0 ] && cmp -s '$work/ref' '$out'"
            check "seccomp $action on $call: pread lanes, one note naming $call" \
                sh -c "grep -q 'I/O pread' '$out.err' &&
                       [ \$(grep -c 'note: io_uring unavailable: .*$named' '$out.err') -eq 1 ]"
        done
    done
fi

# --- O_DIRECT on tmpfs ----------------------------------------------------------------------
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
    shm_model=$(mktemp /dev/shm/sluice-phone-XXXXXX)
    cp "$M" "$shm_model"
    run "$work/shm" "$shm_model" --stats
    check "a model on tmpfs streams the same text" same_text "$work/ref" "$work/shm"
    check "... with buffered reads and one note naming tmpfs" \
        sh -c "grep -q 'buffered (O_DIRECT refused)' '$work/shm.err' &&
               [ \$(grep -c 'note: O_DIRECT is not used on tmpfs' '$work/shm.err') -eq 1 ]"
    rm -f "$shm_model"
else
    echo "   (no writable tmpfs at /dev/shm: skipped)"
fi

# --- mlock capped at 64 KiB -----------------------------------------------------------------
(ulimit -l 64 && run "$work/memlock" "$M")
check "RLIMIT_MEMLOCK 64 KiB: the same text" same_text "$work/ref" "$work/memlock"

# --- no name lookups ------------------------------------------------------------------------
"$SLUICE" serve -m "$M" --host model-host.invalid --port 0 >/dev/null 2>"$work/host.err"
rc=$?
check "serve --host NAME is refused in one line (exit $rc)" \
    sh -c "[ $rc -ne 0 ] && [ \$(wc -l <'$work/host.err') -eq 1 ] &&
           grep -q 'not a numeric address' '$work/host.err'"
finish
