#!/bin/sh
# Prints FILE's bytes as the body of a C array initialiser ("0x3c,0x21,...",
# sixteen a line), for `#include` inside `static const unsigned char x[] =
# { ... };`. POSIX od and sed only, so every build (release, sanitizer,
# aarch64, windows) generates it the same way on the build host. The
# Makefile embeds app/server/web/ui.html, `sluice serve`'s page, with it.
set -eu
[ $# -eq 1 ] && [ -r "$1" ] || {
    echo "usage: scripts/embed.sh FILE" >&2
    exit 2
}
od -An -v -tx1 "$1" | sed -e 's/[ 	]*\([0-9a-f][0-9a-f]\)/0x\1,/g' -e '/^[ 	]*$/d'
