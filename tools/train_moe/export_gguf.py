"""Write the trained student as a glm4moe GGUF (f32), the layout llama.cpp's
glm4moe loader reads: block_count = main layers + 1, the last block the MTP
(nextn) block with its eh_proj/enorm/hnorm/shared_head_norm tensors; the
teacher's SentencePiece vocabulary as tokenizer.ggml.model "llama".

  python3 export_gguf.py --ckpt student.pt --out glm4moe-stories-f32.gguf
"""
import argparse
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from teacher import read_vocab  # noqa: E402

ARCH = "glm4moe"
ALIGN = 32
T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR = 4, 5, 6, 7, 8, 9


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, val):
    out = gstr(key) + struct.pack("<I", typ)
    if typ == T_U32:
        return out + struct.pack("<I", val)
    if typ == T_I32:
        return out + struct.pack("<i", val)
    if typ == T_F32:
        return out + struct.pack("<f", val)
    if typ == T_BOOL:
        return out + struct.pack("<B", 1 if val else 0)
    if typ == T_STR:
        return out + gstr(val)
    raise ValueError(typ)


def kv_arr(key, et, vals):
    out = gstr(key) + struct.pack("<IIQ", T_ARR, et, len(vals))
    if et == T_STR:
        return out + b"".join(gstr(v) for v in vals)
    if et == T_I32:
        return out + struct.pack(f"<{len(vals)}i", *vals)
    if et == T_F32:
        return out + struct.pack(f"<{len(vals)}f", *vals)
    raise ValueError(et)


def vocab_kv(tok_path, n_vocab):
    pieces, scores = read_vocab(tok_path, n_vocab)
    toks, types = [], []
    for i, p in enumerate(pieces):
        if i == 0:
            toks.append(b"<unk>"); types.append(2)
        elif i == 1:
            toks.append(b"<s>"); types.append(3)
        elif i == 2:
            toks.append(b"</s>"); types.append(3)
        elif len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">"):
            toks.append(p); types.append(6)
        else:
            toks.append(p.replace(b" ", "\u2581".encode())); types.append(1)
    return [
        kv("tokenizer.ggml.model", T_STR, "llama"),
        kv_arr("tokenizer.ggml.tokens", T_STR, toks),
        kv_arr("tokenizer.ggml.scores", T_F32, scores),
        kv_arr("tokenizer.ggml.token_type", T_I32, types),
        kv("tokenizer.ggml.unknown_token_id", T_U32, 0),
        kv("tokenizer.ggml.bos_token_id", T_U32, 1),
        kv("tokenizer.ggml.eos_token_id", T_U32, 2),
        kv("tokenizer.ggml.add_bos_token", T_BOOL, True),
        kv("tokenizer.ggml.add_eos_token", T_BOOL, False),
    ]


def tensors(sd, c):
    """(name, float32 array in numpy order = GGUF ne reversed)."""
    out = [("token_embd.weight", sd["embed.weight"]),
           ("output_norm.weight", sd["norm.weight"]),
           ("output.weight", sd["head.weight"])]
    n = c["n_layer"]

    def block(i, p):
        r = [(f"blk.{i}.attn_norm.weight", sd[p + "attn_norm.weight"])]
        for g, s in (("q", "q"), ("k", "k"), ("v", "v")):
            r.append((f"blk.{i}.attn_{g}.weight", sd[p + f"attn.{s}.weight"]))
            r.append((f"blk.{i}.attn_{g}.bias", sd[p + f"attn.{s}.bias"]))
        r.append((f"blk.{i}.attn_output.weight", sd[p + "attn.o.weight"]))
        r.append((f"blk.{i}.post_attention_norm.weight", sd[p + "ffn_norm.weight"]))
        if p + "ffn.router.weight" in sd:
            r += [(f"blk.{i}.ffn_gate_inp.weight", sd[p + "ffn.router.weight"]),
                  (f"blk.{i}.exp_probs_b.bias", sd[p + "ffn.bias"]),
                  (f"blk.{i}.ffn_gate_exps.weight", sd[p + "ffn.gate"]),
                  (f"blk.{i}.ffn_up_exps.weight", sd[p + "ffn.up"]),
                  (f"blk.{i}.ffn_down_exps.weight", sd[p + "ffn.down"]),
                  (f"blk.{i}.ffn_gate_shexp.weight", sd[p + "ffn.shared.gate.weight"]),
                  (f"blk.{i}.ffn_up_shexp.weight", sd[p + "ffn.shared.up.weight"]),
                  (f"blk.{i}.ffn_down_shexp.weight", sd[p + "ffn.shared.down.weight"])]
        else:
            r += [(f"blk.{i}.ffn_gate.weight", sd[p + "ffn.gate.weight"]),
                  (f"blk.{i}.ffn_up.weight", sd[p + "ffn.up.weight"]),
                  (f"blk.{i}.ffn_down.weight", sd[p + "ffn.down.weight"])]
        return r
    for i in range(n):
        out += block(i, f"blocks.{i}.")
    out += block(n, "mtp.")
    out += [(f"blk.{n}.nextn.eh_proj.weight", sd["eh_proj.weight"]),
            (f"blk.{n}.nextn.enorm.weight", sd["enorm.weight"]),
            (f"blk.{n}.nextn.hnorm.weight", sd["hnorm.weight"]),
            (f"blk.{n}.nextn.shared_head_norm.weight", sd["mtp_norm.weight"])]
    return [(k, v.detach().float().numpy().astype("<f4")) for k, v in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", default="/work/shared/models/stories260K/tok512.bin")
    ap.add_argument("--name", default="sluice glm4moe-stories (distilled from stories260K)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    ck = torch.load(a.ckpt)
    c, sd = ck["config"], ck["model"]
    P = f"{ARCH}."
    meta = [
        kv("general.architecture", T_STR, ARCH),
        kv("general.name", T_STR, a.name),
        kv("general.license", T_STR, "mit"),
        kv("general.file_type", T_U32, 0),
        kv("general.alignment", T_U32, ALIGN),
        kv(P + "block_count", T_U32, c["n_layer"] + 1),
        kv(P + "nextn_predict_layers", T_U32, 1),
        kv(P + "context_length", T_U32, c["ctx"]),
        kv(P + "embedding_length", T_U32, c["dim"]),
        kv(P + "feed_forward_length", T_U32, c["ff"]),
        kv(P + "attention.head_count", T_U32, c["n_head"]),
        kv(P + "attention.head_count_kv", T_U32, c["n_kv"]),
        kv(P + "attention.key_length", T_U32, c["head_dim"]),
        kv(P + "attention.value_length", T_U32, c["head_dim"]),
        kv(P + "attention.layer_norm_rms_epsilon", T_F32, c["eps"]),
        kv(P + "rope.dimension_count", T_U32, c["n_rot"]),
        kv(P + "rope.freq_base", T_F32, c["rope_base"]),
        kv(P + "expert_count", T_U32, c["n_expert"]),
        kv(P + "expert_used_count", T_U32, c["top_k"]),
        kv(P + "expert_feed_forward_length", T_U32, c["ff_exp"]),
        kv(P + "expert_shared_count", T_U32, c["n_shared"]),
        kv(P + "leading_dense_block_count", T_U32, c["n_dense"]),
        kv(P + "expert_group_count", T_U32, 1),
        kv(P + "expert_group_used_count", T_U32, 1),
        kv(P + "expert_gating_func", T_U32, 2),
        kv(P + "expert_weights_scale", T_F32, c["scale"]),
        kv(P + "expert_weights_norm", T_BOOL, True),
    ] + vocab_kv(a.tokenizer, c["vocab"])
    ts = tensors(sd, c)
    info, off = [], 0
    for name, arr in ts:
        ne = list(reversed(arr.shape))
        info.append(gstr(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
                    + struct.pack("<IQ", 0, off))  # type 0 = F32
        off += (arr.nbytes + ALIGN - 1) // ALIGN * ALIGN
    head = b"GGUF" + struct.pack("<IQQ", 3, len(ts), len(meta)) + b"".join(meta) + b"".join(info)
    with open(a.out + ".tmp", "wb") as f:
        f.write(head)
        f.write(b"\0" * ((-len(head)) % ALIGN))
        for _, arr in ts:
            b = arr.tobytes()
            f.write(b + b"\0" * ((-len(b)) % ALIGN))
    os.replace(a.out + ".tmp", a.out)
    print(f"{a.out}: {len(ts)} tensors, {os.path.getsize(a.out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
