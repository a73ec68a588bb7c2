#!/usr/bin/env python3
"""gguf_set_template.py IN.gguf OUT.gguf TEMPLATE_FILE - copies a GGUF file
with tokenizer.chat_template replaced (added if absent). The tensor data is
copied byte for byte: tensor offsets are relative to the data section, which
stays aligned. For tests (serve.sh: a thinking template on a generated
model)."""
import struct
import sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def read_str(b, o):
    n, = struct.unpack_from("<Q", b, o)
    return b[o + 8:o + 8 + n], o + 8 + n


def skip_value(b, o, t):
    if t in SIZES:
        return o + SIZES[t]
    if t == 8:
        return read_str(b, o)[1]
    if t == 9:
        et, n = struct.unpack_from("<IQ", b, o)
        o += 12
        for _ in range(n):
            o = skip_value(b, o, et)
        return o
    raise ValueError("unknown GGUF value type %d" % t)


def main():
    src, dst, tmpl_file = sys.argv[1:4]
    b = open(src, "rb").read()
    tmpl = open(tmpl_file, "rb").read()
    magic, version, n_t, n_kv = struct.unpack_from("<4sIQQ", b, 0)
    assert magic == b"GGUF"
    o = 24
    kvs = []
    align = 32
    for _ in range(n_kv):
        k, o2 = read_str(b, o)
        t, = struct.unpack_from("<I", b, o2)
        end = skip_value(b, o2 + 4, t)
        if k == b"general.alignment":
            align, = struct.unpack_from("<I", b, o2 + 4)
        if k != b"tokenizer.chat_template":
            kvs.append(b[o:end])
        o = end
    t_start = o
    for _ in range(n_t):
        _, o = read_str(b, o)
        nd, = struct.unpack_from("<I", b, o)
        o += 4 + 8 * nd + 4 + 8
    tinfo = b[t_start:o]
    data = b[(o + align - 1) // align * align:]
    key = b"tokenizer.chat_template"
    kvs.append(struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(tmpl)) + tmpl)
    out = struct.pack("<4sIQQ", magic, version, n_t, len(kvs)) + b"".join(kvs) + tinfo
    out += b"\0" * ((-len(out)) % align)
    open(dst, "wb").write(out + data)


main()
