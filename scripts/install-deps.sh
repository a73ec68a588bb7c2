#!/usr/bin/env bash
# Installs sluice's build dependencies when they are missing (Debian/Ubuntu).
# Uses apt-get directly as root, through sudo otherwise; if neither works it
# says which packages to install and fails.
#   --aarch64  also the cross toolchain and qemu-user (`make ARCH=aarch64`,
#              `make test-aarch64`), the arm64 package lists that
#              scripts/aarch64-sysroot.sh downloads PCRE2 and jansson from,
#              and dpkg-dev for the libmicrohttpd source package it builds
#   --windows  also the mingw-w64 CRT, headers and winpthreads, lld, wine64,
#              and what scripts/windows-sysroot.sh needs to build PCRE2 and
#              jansson from Debian's source packages (dpkg-dev, cmake)
#              (`make windows`, `make test-windows`; several flags may be given)
set -eu
aarch64=false
windows=false
for a in "$@"; do
    case $a in
    --aarch64) aarch64=true ;;
    --windows) windows=true ;;
    esac
done

need=()
# (pcre2.h refuses to be included without a code unit width)
have_header() { printf '#include <%s>\n' "$1" | cc -DPCRE2_CODE_UNIT_WIDTH=8 -E -x c - >/dev/null 2>&1; }

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
# nginx: tests/cli/serve_scaleout.sh runs it as the user in front of two servers
# (on a systemd machine the package also enables its service on port 80)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need+=(nginx)
# the server's page in headless Chromium (tests/cli/webui.sh; playwright-core comes from npm)
command -v chromium >/dev/null 2>&1 || need+=(chromium fonts-liberation)
command -v npm >/dev/null 2>&1 || need+=(npm)
arm64_lists=false
if $aarch64; then
    command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu)
    [ -f /usr/aarch64-linux-gnu/include/stdio.h ] || need+=(libc6-dev-arm64-cross)
    command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
    # apt-get download of the arm64 -dev packages needs arm64 in the lists
    # (nothing arm64 is installed: the sysroot script unpacks them itself)
    dpkg --print-foreign-architectures 2>/dev/null | grep -qx arm64 || arm64_lists=true
    command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
fi

if $windows; then
    command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)
    [ -f /usr/x86_64-w64-mingw32/lib/libwinpthread.a ] || need+=(mingw-w64-x86-64-dev)
    command -v ld.lld >/dev/null 2>&1 || need+=(lld)
    [ -x /usr/lib/wine/wine64 ] || need+=(wine64)
    command -v wine >/dev/null 2>&1 || need+=(wine)
    command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
    command -v cmake >/dev/null 2>&1 || need+=(cmake)
    command -v make >/dev/null 2>&1 || need+=(make)
fi

if [ ${#need[@]} -eq 0 ] && ! $arm64_lists; then
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
if $arm64_lists; then $SUDO dpkg --add-architecture arm64; fi
$SUDO apt-get update -qq
if [ ${#need[@]} -gt 0 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
