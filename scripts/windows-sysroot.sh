#!/usr/bin/env bash
# Fills DIR (default build/windows/sysroot) with static x86_64-w64-mingw32
# builds of the two libraries the Windows exe links: PCRE2 (tokenizers) and
# jansson (JSON), compiled from Debian's source packages (`apt-get source`,
# Debian's patches applied by dpkg-source) with the mingw-w64 cross compiler.
# The source lines it needs are added to apt's list if missing (a deb-src
# entry for the running suite). The result is kept until DIR/.complete goes
# away, so CI builds it once per machine (some 2 minutes on 2 cores). Needs dpkg-dev, cmake and gcc-mingw-w64-x86-64
# (scripts/install-deps.sh --windows).
# libmicrohttpd is not built yet: the exe has no `serve` (docs/ARCHITECTURE.md,
# "Windows").
set -eu
dir=${1:-build/windows/sysroot}
host=x86_64-w64-mingw32
if [ -f "$dir/.complete" ]; then exit 0; fi
command -v $host-gcc >/dev/null 2>&1 || {
    echo "sluice: no $host-gcc; run scripts/install-deps.sh --windows first" >&2
    exit 1
}
mkdir -p "$dir"
prefix=$(cd "$dir" && pwd)
src="$prefix/src"
rm -rf "$src" "$prefix/lib" "$prefix/include" && mkdir -p "$src"
chmod 777 "$src" 2>/dev/null || true # apt's _apt user writes there when it can

# a deb-src entry for this system's suite, once
if ! apt-get source --print-uris pcre2 >/dev/null 2>&1; then
    . /etc/os-release
    list=/etc/apt/sources.list.d/sluice-src.sources
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "${VERSION_CODENAME:-bookworm}" >"$list"
    apt-get update -qq
fi
(cd "$src" && apt-get source -qq pcre2 jansson >/dev/null 2>&1) || {
    echo "sluice: apt-get source pcre2 jansson failed (needs dpkg-dev and a deb-src entry)" >&2
    exit 1
}

jobs=$(nproc)
build() { # DIR CONFIGURE-ARGS...
    local d=$1
    shift
    (cd "$d" && ./configure -q --host=$host --prefix="$prefix" --disable-shared --enable-static \
        CFLAGS="-O2" "$@" >/dev/null && make -s -j"$jobs" >/dev/null && make -s install >/dev/null)
}
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
rm -rf "$src" "$prefix/share" "$prefix/bin" "$prefix/cmake"
touch "$prefix/.complete"
