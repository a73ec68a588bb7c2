# gguf_vocab.py - reads and writes vocabulary-only GGUF files (metadata, no
# tensors) for the tokenizer golden scripts of tests/data. Written for sluice
# from the GGUF format description (version 3, little-endian).
import struct

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
_FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
        U64: "Q", I64: "q", F64: "d"}


class Reader:
    def __init__(self, data):
        self.d, self.o = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.d, self.o)
        self.o += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.d[self.o:self.o + n]
        self.o += n
        return s

    def value(self, t):
        if t == STR:
            return self.string()
        if t == ARR:
            et, n = self.take("I"), self.take("Q")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(_FMT[t])


def read(path):
    """Returns [(key, type, value)]: strings as bytes, arrays as (type, list)."""
    r = Reader(open(path, "rb").read())
    assert r.d[:4] == b"GGUF", path
    r.o = 4
    r.take("I")
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    assert n_tensors == 0, "vocabulary-only files only"
    out = []
    for _ in range(n_kv):
        k = r.string().decode()
        t = r.take("I")
        out.append((k, t, r.value(t)))
    return out


def _enc(t, v):
    if t == STR:
        b = v if isinstance(v, bytes) else v.encode()
        return struct.pack("<Q", len(b)) + b
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(_enc(et, x) for x in items)
    return struct.pack("<" + _FMT[t], v)


def write(path, kvs):
    """kvs: [(key, type, value)] as read() returns them."""
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
        for k, t, v in kvs:
            f.write(_enc(STR, k) + struct.pack("<I", t) + _enc(t, v))
