#!/usr/bin/env bash
# Fills DIR (default build/aarch64/sysroot) with the arm64 builds of the two
# libraries the aarch64 cross build links statically: PCRE2 (tokenizers) and
# jansson (JSON). Downloads the Debian arm64 packages with `apt-get download`
# (needs `dpkg --add-architecture arm64` and an apt-get update, which
# scripts/install-deps.sh --aarch64 does) and unpacks them with dpkg -x, so
# nothing is installed into the host's arm64 multiarch tree (that would pull
# libc6:arm64 and upgrade host packages to match). libmicrohttpd and
# liburing are left out: the aarch64 binary has no `serve` and reads with
# pread lanes.
set -eu
dir=${1:-build/aarch64/sysroot}
pkgs=(libpcre2-dev:arm64 libpcre2-8-0:arm64 libjansson-dev:arm64 libjansson4:arm64)
if [ -f "$dir/.complete" ]; then exit 0; fi
mkdir -p "$dir/debs"
chmod 777 "$dir/debs" 2>/dev/null || true # apt's _apt user writes there when it can
(cd "$dir/debs" && apt-get download "${pkgs[@]}" 2>/dev/null) || {
    echo "sluice: cannot download ${pkgs[*]}; run scripts/install-deps.sh --aarch64 first" >&2
    exit 1
}
for d in "$dir"/debs/*.deb; do dpkg -x "$d" "$dir"; done
touch "$dir/.complete"
