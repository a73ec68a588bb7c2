#!/usr/bin/env python3
"""set_sections.py FILE.gguf S0 S1 S2 S3: rewrites, in place, the four int32
values of qwen35moe.rope.dimension_sections in a GGUF file (the array keeps
its length, so nothing else moves). Used to make IMROPE section splits
other than the generator's (see README.md)."""
import struct
import sys

KEY = b"qwen35moe.rope.dimension_sections"


def main():
    path, vals = sys.argv[1], [int(v) for v in sys.argv[2:6]]
    if len(vals) != 4:
        sys.exit("usage: set_sections.py FILE.gguf S0 S1 S2 S3")
    with open(path, "r+b") as f:
        head = f.read(1 << 20)
        at = head.find(struct.pack("<Q", len(KEY)) + KEY)
        if at < 0:
            sys.exit("%s: no %s" % (path, KEY.decode()))
        at += 8 + len(KEY)
        vtype, etype, n = struct.unpack_from("<IIQ", head, at)
        if vtype != 9 or etype not in (4, 5) or n != 4:  # array of 4 (u)int32
            sys.exit("%s: %s is not an array of 4 int32" % (path, KEY.decode()))
        f.seek(at + 16)
        f.write(struct.pack("<4i", *vals))


if __name__ == "__main__":
    main()
