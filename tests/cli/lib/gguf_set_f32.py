#!/usr/bin/env python3
"""gguf_set_f32.py FILE KEY VALUE - overwrites, in place, the value of the
scalar float32 metadata key KEY of the GGUF file FILE with VALUE (the file
keeps its size and every other byte). For tests that give a model an absurd
hyperparameter (tests/cli/finite.sh). Written from the GGUF spec
(little-endian; kv = u64-length key, u32 type, value). Exits 1 when the
key is absent or not a float32."""
import struct
import sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
T_F32, T_STR, T_ARR = 6, 8, 9


def skip_value(b, o, t):
    if t in SIZES:
        return o + SIZES[t]
    if t == T_STR:
        n, = struct.unpack_from("<Q", b, o)
        return o + 8 + n
    if t == T_ARR:
        et, n = struct.unpack_from("<IQ", b, o)
        o += 12
        if et in SIZES:
            return o + n * SIZES[et]
        for _ in range(n):
            o = skip_value(b, o, et)
        return o
    raise ValueError("unknown GGUF value type %d" % t)


def main():
    path, key, value = sys.argv[1], sys.argv[2].encode(), float(sys.argv[3])
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"GGUF":
        sys.exit("%s: not a GGUF file" % path)
    n_kv, = struct.unpack_from("<Q", b, 16)
    o = 24
    for _ in range(n_kv):
        n, = struct.unpack_from("<Q", b, o)
        k = b[o + 8:o + 8 + n]
        o += 8 + n
        t, = struct.unpack_from("<I", b, o)
        o += 4
        if k == key:
            if t != T_F32:
                sys.exit("%s: key %s has type %d, not float32" % (path, key.decode(), t))
            with open(path, "r+b") as f:
                f.seek(o)
                f.write(struct.pack("<f", value))
            return
        o = skip_value(b, o, t)
    sys.exit("%s: no key %s" % (path, key.decode()))


main()
