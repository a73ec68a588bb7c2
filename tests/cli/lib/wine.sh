# wine.sh - sourced by the tests of the Windows build under wine (after
# common.sh): EXE and X86 name the exe and the Linux build, WINE wine's
# loader; without any of them the test ends here as skipped (0 passed).
EXE=${SLUICE_WIN:-build/windows/sluice.exe}
X86=${SLUICE_REL:-build/rel/sluice}
WINE=$(command -v wine || echo /usr/lib/wine/wine64)
if [ ! -f "$EXE" ] || [ ! -x "$WINE" ] || [ ! -x "$X86" ]; then
    echo "   (no $EXE, wine or $X86: skipped)"
    finish
    exit 0
fi
export WINEDEBUG=-all
