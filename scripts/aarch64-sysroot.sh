#!/usr/bin/env bash
# Fills DIR (default build/aarch64/sysroot) with the arm64 builds of the three
# libraries the aarch64 cross build links statically:
#  - PCRE2 (tokenizers) and jansson (JSON): Debian's arm64 packages, fetched
#    with `apt-get download` (needs `dpkg --add-architecture arm64` and an
#    apt-get update, which scripts/install-deps.sh --aarch64 does) and
#    unpacked with dpkg -x, so nothing is installed into the host's arm64
#    multiarch tree (that would pull libc6:arm64 and upgrade host packages);
#  - libmicrohttpd (`serve`): compiled from Debian's source package
#    (`apt-get source`, Debian's patches applied) with the cross compiler,
#    static and without HTTPS, because Debian's arm64 archive links GnuTLS
#    and its dozen dependencies, none of which a phone's static binary wants
#    (TLS belongs to a reverse proxy, docs/server.md). Some 2 minutes on 2
#    cores, once per machine.
# liburing is left out: the aarch64 binary reads with pread lanes.
# DIR/.complete-serve marks a finished sysroot (the Makefile's stamp).
set -eu
dir=${1:-build/aarch64/sysroot}
host=aarch64-linux-gnu
pkgs=(libpcre2-dev:arm64 libpcre2-8-0:arm64 libjansson-dev:arm64 libjansson4:arm64)
if [ -f "$dir/.complete-serve" ]; then exit 0; fi
mkdir -p "$dir/debs"
prefix=$(cd "$dir" && pwd)
chmod 777 "$dir/debs" 2>/dev/null || true # apt's _apt user writes there when it can
if [ ! -f "$dir/.complete" ]; then
    (cd "$dir/debs" && apt-get download "${pkgs[@]}" 2>/dev/null) || {
        echo "sluice: cannot download ${pkgs[*]}; run scripts/install-deps.sh --aarch64 first" >&2
        exit 1
    }
    for d in "$dir"/debs/*.deb; do dpkg -x "$d" "$dir"; done
    touch "$dir/.complete"
fi

# libmicrohttpd from source; the same deb-src entry scripts/windows-sysroot.sh adds
src="$prefix/src"
rm -rf "$src" && mkdir -p "$src"
chmod 777 "$src" 2>/dev/null || true
if ! apt-get source --print-uris libmicrohttpd >/dev/null 2>&1; then
    . /etc/os-release
    list=/etc/apt/sources.list.d/sluice-src.sources
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "${VERSION_CODENAME:-bookworm}" >"$list"
    apt-get update -qq
fi
(cd "$src" && apt-get source -qq libmicrohttpd >/dev/null 2>&1) || {
    echo "sluice: apt-get source libmicrohttpd failed (needs dpkg-dev and a deb-src entry)" >&2
    exit 1
}
cc=${A64_CC:-$host-gcc}
msrc=$(ls -d "$src"/libmicrohttpd-*/ | head -1)
(cd "$msrc" && ./configure -q --host=$host CC="$cc" --prefix="$prefix/usr" \
    --libdir="$prefix/usr/lib/$host" --disable-shared --enable-static --disable-https \
    --without-gnutls --disable-doc --disable-examples --disable-curl CFLAGS="-O2" >/dev/null 2>&1 &&
    make -s -C src/microhttpd -j"$(nproc)" >/dev/null 2>&1 &&
    make -s -C src/microhttpd install >/dev/null 2>&1 &&
    make -s -C src/include install >/dev/null 2>&1) || {
    echo "sluice: building libmicrohttpd for $host failed (in $msrc)" >&2
    exit 1
}
rm -rf "$src"
touch "$prefix/.complete-serve"
