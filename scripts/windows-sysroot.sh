#!/usr/bin/env bash
# Fills DIR (default build/windows/sysroot) with static x86_64-w64-mingw32
# builds of the three libraries the Windows exe links: PCRE2 (tokenizers),
# jansson (JSON) and libmicrohttpd (`serve`; without HTTPS, as for aarch64:
# TLS belongs to a reverse proxy), compiled from Debian's source packages
# (`apt-get source`, Debian's patches applied by dpkg-source) with the
# mingw-w64 cross compiler. The source lines it needs are added to apt's
# list if missing (a deb-src entry for the running suite). DIR/.complete
# marks PCRE2 and jansson done, DIR/.complete-serve everything (the
# Makefile's stamp), so CI builds it once per machine: some 2 minutes for
# PCRE2 and jansson on 2 cores, and 2 minutes of CPU for libmicrohttpd (most
# of it its serial configure). Needs dpkg-dev, cmake and gcc-mingw-w64-x86-64
# (scripts/install-deps.sh --windows).
set -eu
dir=${1:-build/windows/sysroot}
host=x86_64-w64-mingw32
if [ -f "$dir/.complete-serve" ]; then exit 0; fi
command -v $host-gcc >/dev/null 2>&1 || {
    echo "sluice: no $host-gcc; run scripts/install-deps.sh --windows first" >&2
    exit 1
}
mkdir -p "$dir"
prefix=$(cd "$dir" && pwd)
src="$prefix/src"
if [ -f "$prefix/.complete" ]; then rm -rf "$src"
else rm -rf "$src" "$prefix/lib" "$prefix/include"; fi
mkdir -p "$src"
chmod 777 "$src" 2>/dev/null || true # apt's _apt user writes there when it can

# a deb-src entry for this system's suite, once
if ! apt-get source --print-uris pcre2 >/dev/null 2>&1; then
    . /etc/os-release
    list=/etc/apt/sources.list.d/sluice-src.sources
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "${VERSION_CODENAME:-bookworm}" >"$list"
    apt-get update -qq
fi
pkgs="pcre2 jansson libmicrohttpd"
[ -f "$prefix/.complete" ] && pkgs=libmicrohttpd
(cd "$src" && apt-get source -qq $pkgs >/dev/null 2>&1) || {
    echo "sluice: apt-get source $pkgs failed (needs dpkg-dev and a deb-src entry)" >&2
    exit 1
}

jobs=$(nproc)
build() { # DIR CONFIGURE-ARGS...
    local d=$1
    shift
    (cd "$d" && ./configure -q --host=$host --prefix="$prefix" --disable-shared --enable-static \
        CFLAGS="-O2" "$@" >/dev/null && make -s -j"$jobs" >/dev/null && make -s install >/dev/null)
}
if [ ! -f "$prefix/.complete" ]; then
    # PCRE2_STATIC: the headers declare plain (not dllimport) symbols
    build "$(ls -d "$src"/pcre2-*/ | head -1)" CPPFLAGS=-DPCRE2_STATIC --enable-pcre2-8 --disable-pcre2-16 --disable-pcre2-32 \
        --enable-unicode --enable-jit
    # jansson: Debian regenerates its autotools files; its CMake build needs nothing extra
    jsrc=$(ls -d "$src"/jansson-*/ | head -1)
    cmake -S "$jsrc" -B "$src/jansson-build" -DCMAKE_SYSTEM_NAME=Windows -DCMAKE_C_COMPILER=$host-gcc \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DJANSSON_BUILD_SHARED_LIBS=OFF \
        -DJANSSON_BUILD_DOCS=OFF -DJANSSON_WITHOUT_TESTS=ON -DJANSSON_EXAMPLES=OFF >/dev/null
    cmake --build "$src/jansson-build" -j "$jobs" >/dev/null
    cmake --install "$src/jansson-build" >/dev/null
    rm -rf "$prefix/share" "$prefix/bin" "$prefix/cmake"
    touch "$prefix/.complete"
fi

# libmicrohttpd: the library and its header only (no tests, docs or
# examples); its configure picks native Windows threads and WSAPoll (the
# server asks for poll)
msrc=$(ls -d "$src"/libmicrohttpd-*/ | head -1)
(cd "$msrc" && ./configure -q --host=$host --prefix="$prefix" --disable-shared --enable-static \
    --disable-https --without-gnutls --disable-doc --disable-examples --disable-curl \
    --disable-nls CFLAGS="-O2" >/dev/null &&
    make -s -C src/microhttpd -j"$jobs" >/dev/null && make -s -C src/microhttpd install >/dev/null &&
    make -s -C src/include install >/dev/null) || {
    echo "sluice: building libmicrohttpd for $host failed (in $msrc)" >&2
    exit 1
}
rm -rf "$src" "$prefix/share" "$prefix/lib/libmicrohttpd.la"
touch "$prefix/.complete-serve"
