#!/usr/bin/env python3
"""Prints the two generated tables of src/util/libm_glibc.c.

EXP2_TAB: entry i is the bit pattern of 2^(i/32) rounded to the nearest
double, minus i << 47 (so that adding k << 47 for an integer k = 32 q + i
scales it by 2^q). 2^(i/32) is computed with exact rational bounds: the
root is bracketed by bisection on the 32nd power, far past the 53 bits
needed, then rounded once.

INV_PIO4: entry j is the 32 bits of 2/pi's binary fraction ending at bit
8 (j + 1), i.e. floor(2/pi * 2^(8 (j + 1))) mod 2^32, from pi in integer
fixed point (Machin's formula, 400 bits)."""
from fractions import Fraction


def root32_of_pow2(i, bits=120):
    """2^(i/32) as an interval [lo, hi] of width 2^-bits."""
    target = Fraction(2) ** i
    lo, hi = Fraction(1), Fraction(2)
    for _ in range(bits):
        mid = (lo + hi) / 2
        if mid ** 32 <= target:
            lo = mid
        else:
            hi = mid
    return lo, hi


def round_double_bits(lo, hi):
    """The bits of the double nearest to a value in [1, 2) known to lie in
    [lo, hi]; both ends must round alike (2^(i/32) is irrational, so a
    narrow enough interval never straddles a tie)."""
    def nearest(v):
        a = v * 2 ** 52 - 2 ** 52  # the mantissa field, as a rational
        m = int(a)
        return m + 1 if a - m > Fraction(1, 2) else m
    m = nearest(lo)
    assert m == nearest(hi), "interval straddles a rounding boundary"
    return (0x3FF << 52) | m


def arctan_inv(n, one):
    """atan(1/n) * one, in integers (alternating series, truncated)."""
    total, term, k, sign = 0, one // n, 1, 1
    while term:
        total += sign * (term // k)
        term //= n * n
        k += 2
        sign = -sign
    return total


def two_over_pi_bits(bits):
    """floor(2/pi * 2^bits), computed with ample guard bits."""
    guard = 64
    one = 1 << (bits + guard + 8)
    pi = 16 * arctan_inv(5, one) - 4 * arctan_inv(239, one)
    return ((2 * one * one) // pi) >> (guard + 8)


def main():
    print("EXP2_TAB:")
    rows = []
    for i in range(32):
        lo, hi = root32_of_pow2(i)
        bits = round_double_bits(lo, hi) - (i << 47)
        rows.append("0x%016xull" % bits)
    for j in range(0, 32, 4):
        print("    " + ", ".join(rows[j:j + 4]) + ",")
    print("INV_PIO4:")
    words = [two_over_pi_bits(8 * (j + 1)) & 0xFFFFFFFF for j in range(24)]
    for j in range(0, 24, 6):
        print("    " + ", ".join("0x%x" % w for w in words[j:j + 6]) + ",")


main()
