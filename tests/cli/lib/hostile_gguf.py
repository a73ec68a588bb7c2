#!/usr/bin/env python3
"""hostile_gguf.py - writes small GGUF v3 files whose strings carry terminal
escape sequences, for tests/cli/escapes.sh. Written by hand from the GGUF
spec (little-endian; kv = key string, u32 type, value; tensor info = name,
u32 n_dims, u64 ne[], u32 type, u64 offset; data aligned to 32).

usage: hostile_gguf.py KIND OUT.gguf
  meta   architecture, a key, a string value, a string array and a tensor
         name with ESC/BEL/C1/invalid-UTF-8 bytes
  tok    a file whose tokenizer.ggml.model is an escape sequence
  pre    a byte-level BPE vocabulary (256 byte tokens) whose
         tokenizer.ggml.pre is an escape sequence
"""
import struct
import sys

T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR = 4, 5, 6, 7, 8, 9
ESC = b"\x1b[31m"
RESET = b"\x1b[0m"


def s(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


def kv_str(k, v):
    return s(k) + struct.pack("<I", T_STR) + s(v)


def kv_u32(k, v):
    return s(k) + struct.pack("<II", T_U32, v)


def kv_strs(k, vs):
    out = s(k) + struct.pack("<IIQ", T_ARR, T_STR, len(vs))
    for v in vs:
        out += s(v)
    return out


def kv_i32s(k, vs):
    return s(k) + struct.pack("<IIQ", T_ARR, T_I32, len(vs)) + b"".join(struct.pack("<i", v) for v in vs)


def gguf(kvs, tensors):
    """tensors: list of (name bytes, [ne...]) of f32 zeros."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    data = b""
    for name, ne in tensors:
        n = 1
        for d in ne:
            n *= d
        head += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        head += struct.pack("<IQ", 0, len(data))  # type 0 = f32
        data += b"\0" * (4 * n)
        data += b"\0" * (-len(data) % 32)
    head += b"\0" * (-len(head) % 32)
    return head + data


def gpt2_byte_chars():
    """The GPT-2 byte -> unicode stand-in table."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b].encode() for b in range(256)]


def main():
    kind, out = sys.argv[1], sys.argv[2]
    if kind == "meta":
        arch = ESC + b"evil" + RESET
        kvs = [
            kv_str("general.architecture", arch),
            kv_str("general.name", b"name \x1b]0;title\x07 \xc2\x9b2J \xff\xfe end"),
            kv_u32(b"\x1b[31mevil.key" + RESET, 7),
            kv_str(b"other.\x1b]52;c;aGk=\x07", b"\x1b[2Jcleared"),
            kv_strs("other.list", [b"a\x1b[31mb", b"\xe4\xbd\xa0\xe5\xa5\xbd", b"\x9b" + b"1m"]),
        ]
        tensors = [(b"blk.0." + ESC + b"x.weight", [4]), (b"token_embd\x1b[0m.weight", [4, 2])]
        data = gguf(kvs, tensors)
    elif kind == "tok":
        kvs = [
            kv_str("general.architecture", "llama"),
            kv_str("tokenizer.ggml.model", ESC + b"bpe" + RESET),
            kv_strs("tokenizer.ggml.tokens", [b"a", b"b"]),
        ]
        data = gguf(kvs, [])
    elif kind == "pre":
        toks = gpt2_byte_chars()
        kvs = [
            kv_str("general.architecture", "llama"),
            kv_str("tokenizer.ggml.model", "gpt2"),
            kv_str("tokenizer.ggml.pre", ESC + b"pre\xc2\x9b" + RESET),
            kv_strs("tokenizer.ggml.tokens", toks),
            kv_i32s("tokenizer.ggml.token_type", [1] * len(toks)),
            kv_strs("tokenizer.ggml.merges", []),
        ]
        data = gguf(kvs, [])
    else:
        sys.exit("unknown kind " + kind)
    with open(out, "wb") as f:
        f.write(data)


main()
