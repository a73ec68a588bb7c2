"""Sample the teacher into a corpus: N sequences of T tokens, each starting
with BOS (1) and sampled at temperature TEMP; the teacher's own BOS between
stories is kept (it starts the next story). Writes uint16 tokens, row-major
[N, T], to OUT, appending batch by batch (--resume continues a stopped run:
batch b draws from numpy's PCG64 seeded by (SEED, b), so the rows do not
depend on where a run stopped).

The teacher runs in numpy here (float32, one decoding step for a batch of
rows at a time): with OpenBLAS (Debian's libopenblas0-serial, put first with
LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-serial) it sampled
8.3k tokens per CPU-second over 1M tokens (batch 1024), against 4.7k for the
torch step over the reference BLAS.

  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-serial \\
  nice -n 19 python3 gen_corpus.py --seed 11 --n 40960 --out corpus.u16

--sampler torch is the first form (teacher.step in torch, torch's generator
seeded by SEED over the whole run, torch.multinomial; --batch 512), which
made the corpora of the committed files (seeds 1 and 2).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from teacher import Teacher  # noqa: E402


class NpTeacher:
    """The teacher's weights as float32 numpy arrays, for batched decoding."""

    def __init__(self, t):
        self.t = t
        self.emb = t.emb.numpy()
        f = lambda a: np.ascontiguousarray(a.numpy().transpose(0, 2, 1))  # noqa: E731
        self.wq, self.wk, self.wv, self.wo = f(t.wq), f(t.wk), f(t.wv), f(t.wo)
        self.w1, self.w2, self.w3 = f(t.w1), f(t.w2), f(t.w3)
        self.rms_att, self.rms_ffn = t.rms_att.numpy(), t.rms_ffn.numpy()
        self.rms_final = t.rms_final.numpy()
        self.wcls = np.ascontiguousarray(t.wcls.numpy().T)
        self.cos, self.sin = t.cos.numpy(), t.sin.numpy()


def rms(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w


def step(n, tok, pos, kt, v):
    """Logits [B, V] for one token per row at position pos; kt [L, B, kv, hs,
    T] and v [L, B, kv, T, hs] are the caches, written at pos."""
    t = n.t
    B = tok.shape[0]
    rep = t.n_heads // t.n_kv
    c, s = n.cos[pos], n.sin[pos]

    def rope(z):
        a, b = z[..., 0::2], z[..., 1::2]
        return np.stack((a * c - b * s, a * s + b * c), -1).reshape(z.shape)
    x = n.emb[tok]
    for l in range(t.n_layers):
        h = rms(x, n.rms_att[l])
        q = rope((h @ n.wq[l]).reshape(B, t.n_kv, rep, t.hs))
        kt[l, :, :, :, pos] = rope((h @ n.wk[l]).reshape(B, t.n_kv, t.hs))
        v[l, :, :, pos] = (h @ n.wv[l]).reshape(B, t.n_kv, t.hs)
        a = np.matmul(q, kt[l, :, :, :, :pos + 1]) * np.float32(1 / np.sqrt(t.hs))
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = x + np.matmul(a, v[l, :, :, :pos + 1]).reshape(B, t.dim) @ n.wo[l]
        h = rms(x, n.rms_ffn[l])
        g = h @ n.w1[l]
        x = x + (g / (1 + np.exp(-g)) * (h @ n.w3[l])) @ n.w2[l]
    return rms(x, n.rms_final) @ n.wcls


def sample_batch(n, B, T, temp, rng):
    """B rows of T tokens from BOS: inverse-CDF sampling of softmax(logits /
    temp) with one uniform draw per row and step."""
    t = n.t
    kt = np.zeros((t.n_layers, B, t.n_kv, t.hs, T), np.float32)
    v = np.zeros((t.n_layers, B, t.n_kv, T, t.hs), np.float32)
    out = np.empty((B, T), np.uint16)
    tok = np.ones(B, np.int64)
    out[:, 0] = 1
    for pos in range(T - 1):
        lg = step(n, tok, pos, kt, v).astype(np.float64) / temp
        p = np.exp(lg - lg.max(-1, keepdims=True))
        cdf = np.cumsum(p, -1)
        u = rng.random(B) * cdf[:, -1]
        tok = np.minimum((cdf < u[:, None]).sum(-1), t.vocab - 1)
        out[:, pos + 1] = tok
    return out


def torch_sampler(a):
    """The first form: one torch generator for the whole run."""
    import torch
    from teacher import Cache
    from teacher import step as torch_step
    torch.set_num_threads(1)
    t = Teacher(a.model)
    g = torch.Generator().manual_seed(a.seed)
    with open(a.out, "wb") as f:
        for b0 in range(0, a.n, a.batch):
            B = min(a.batch, a.n - b0)
            tok = torch.ones(B, dtype=torch.long)
            seq = [tok[:, None]]
            cache = Cache(t, B, a.len)
            for pos in range(a.len - 1):
                p = torch.softmax(torch_step(t, tok, pos, cache) / a.temp, -1)
                tok = torch.multinomial(p, 1, generator=g)[:, 0]
                seq.append(tok[:, None])
            f.write(torch.cat(seq, 1).numpy().astype("<u2").tobytes())
            f.flush()
            print(f"{b0 + B}/{a.n} sequences", file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/work/shared/models/stories260K/stories260K.bin")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=4096, help="sequences")
    ap.add_argument("--len", type=int, default=256, help="tokens per sequence, BOS included")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--temp", type=float, default=1.0)
    ap.add_argument("--resume", action="store_true", help="append to OUT's whole batches")
    ap.add_argument("--sampler", choices=("numpy", "torch"), default="numpy")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.sampler == "torch":
        return torch_sampler(a)
    n = NpTeacher(Teacher(a.model))
    row = a.len * 2
    done = 0
    if a.resume and os.path.exists(a.out):
        done = os.path.getsize(a.out) // (row * a.batch) * a.batch
        os.truncate(a.out, done * row)
    f = open(a.out, "ab" if done else "wb")
    t0, c0 = time.time(), time.process_time()
    for b0 in range(done, a.n, a.batch):
        B = min(a.batch, a.n - b0)
        rng = np.random.Generator(np.random.PCG64([a.seed, b0 // a.batch]))
        f.write(sample_batch(n, B, a.len, a.temp, rng).astype("<u2").tobytes())
        f.flush()
        print(f"{b0 + B}/{a.n} sequences, {(b0 + B) * a.len} tokens, "
              f"{time.time() - t0:.0f} s, {time.process_time() - c0:.0f} CPU-s",
              file=sys.stderr, flush=True)
    f.close()


if __name__ == "__main__":
    main()
