#!/usr/bin/env bash
# Installs sluice's build dependencies when they are missing (Debian/Ubuntu).
# Uses apt-get directly as root, through sudo otherwise; if neither works it
# says which packages to install and fails.
set -eu

need=()
have_header() { printf '#include <%s>\n' "$1" | cc -E -x c - >/dev/null 2>&1; }

command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v clang >/dev/null 2>&1 || need+=(clang)
have_header pcre2.h || need+=(libpcre2-dev)
have_header liburing.h || need+=(liburing-dev)
have_header jansson.h || need+=(libjansson-dev)
have_header microhttpd.h || need+=(libmicrohttpd-dev)
[ -n "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a 2>/dev/null)" ] || need+=(libclang-rt-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi

echo "sluice: installing build dependencies: ${need[*]}"
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo"
else
    echo "sluice: missing packages: ${need[*]}" >&2
    echo "sluice: install them with: sudo apt-get install ${need[*]}" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "sluice: no apt-get here; install the equivalents of: ${need[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
