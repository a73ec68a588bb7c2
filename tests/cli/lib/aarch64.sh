# aarch64.sh - sourced by the tests of the aarch64 build under qemu-user
# (after common.sh): A64 and X86 name the two binaries; without either, or
# without qemu-aarch64, the test ends here as skipped (0 passed).
A64=${SLUICE_A64:-build/aarch64/sluice}
X86=${SLUICE_REL:-build/rel/sluice}
if [ ! -x "$A64" ] || ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -x "$X86" ]; then
    echo "   (no $A64, qemu-aarch64 or $X86: skipped)"
    finish
    exit 0
fi
