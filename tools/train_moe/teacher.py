"""The teacher: llama2.c's stories260K checkpoint and its tok512 vocabulary,
read from llama2.c's file formats and run in torch (float32).

Checkpoint: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
vocab_size, seq_len; a positive vocab_size means the classifier is the token
embedding), then float32 tensors in llama2.c's order. Rope rotates adjacent
pairs over each whole head with base 10000; RMS norm eps 1e-5."""
import struct

import numpy as np
import torch
import torch.nn.functional as F


def read_vocab(path, n_vocab):
    """Returns (pieces as bytes, scores) from llama2.c's tokenizer file."""
    pieces, scores = [], []
    with open(path, "rb") as f:
        struct.unpack("<i", f.read(4))
        for _ in range(n_vocab):
            score, n = struct.unpack("<fi", f.read(8))
            pieces.append(f.read(n))
            scores.append(score)
    return pieces, scores


class Teacher:
    def __init__(self, path):
        raw = open(path, "rb").read()
        (self.dim, self.hidden, self.n_layers, self.n_heads, self.n_kv,
         vocab, self.seq_len) = struct.unpack("<7i", raw[:28])
        self.vocab = abs(vocab)
        w = np.frombuffer(raw, dtype="<f4", offset=28)
        D, H, L, V = self.dim, self.hidden, self.n_layers, self.vocab
        self.hs = D // self.n_heads
        kvd = self.n_kv * self.hs
        off = 0

        def take(*shape):
            nonlocal off
            n = int(np.prod(shape))
            t = torch.from_numpy(w[off:off + n].copy()).reshape(shape)
            off += n
            return t
        self.emb = take(V, D)
        self.rms_att = take(L, D)
        self.wq = take(L, D, D)
        self.wk = take(L, kvd, D)
        self.wv = take(L, kvd, D)
        self.wo = take(L, D, D)
        self.rms_ffn = take(L, D)
        self.w1 = take(L, H, D)
        self.w2 = take(L, D, H)
        self.w3 = take(L, H, D)
        self.rms_final = take(D)
        off += self.seq_len * self.hs  # llama2.c's stored rope tables, unused
        self.wcls = self.emb if vocab > 0 else take(V, D)
        freq = 1.0 / (10000.0 ** (torch.arange(0, self.hs, 2).float() / self.hs))
        ang = torch.arange(self.seq_len).float()[:, None] * freq[None, :]
        self.cos, self.sin = torch.cos(ang), torch.sin(ang)

    @staticmethod
    def _rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    def _rope(self, x, pos0):
        # x [B, h, T, hs]; adjacent pairs (2i, 2i+1)
        T = x.shape[2]
        c = self.cos[pos0:pos0 + T]
        s = self.sin[pos0:pos0 + T]
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)

    @torch.no_grad()
    def forward(self, tok, cache=None, pos0=0):
        """Logits [B, T, V] for tokens [B, T] at positions pos0.. ; cache is a
        list of (k, v) per layer, extended in place when given."""
        B, T = tok.shape
        x = self.emb[tok]
        rep = self.n_heads // self.n_kv
        for l in range(self.n_layers):
            h = self._rms(x, self.rms_att[l])
            q = (h @ self.wq[l].T).view(B, T, self.n_heads, self.hs).transpose(1, 2)
            k = (h @ self.wk[l].T).view(B, T, self.n_kv, self.hs).transpose(1, 2)
            v = (h @ self.wv[l].T).view(B, T, self.n_kv, self.hs).transpose(1, 2)
            q, k = self._rope(q, pos0), self._rope(k, pos0)
            if cache is not None:
                if len(cache) > l:
                    k = torch.cat((cache[l][0], k), 2)
                    v = torch.cat((cache[l][1], v), 2)
                    cache[l] = (k, v)
                else:
                    cache.append((k, v))
            k = k.repeat_interleave(rep, 1)
            v = v.repeat_interleave(rep, 1)
            o = attend(q, k, v, T > 1)
            x = x + o.transpose(1, 2).reshape(B, T, self.dim) @ self.wo[l].T
            h = self._rms(x, self.rms_ffn[l])
            x = x + (F.silu(h @ self.w1[l].T) * (h @ self.w3[l].T)) @ self.w2[l].T
        return self._rms(x, self.rms_final) @ self.wcls.T


def attend(q, k, v, causal):
    """Softmax attention [B, h, Tq, d] x [B, h, Tk, d]; causal masks key j >
    query i when Tq == Tk (torch 1.13 has no fused attention)."""
    s = (q @ k.transpose(-1, -2)) / (q.shape[-1] ** 0.5)
    if causal:
        T = q.shape[2]
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


class Cache:
    """Preallocated K/V for incremental decoding: [L, B, n_kv, T, hs] each."""

    def __init__(self, t, B, T):
        self.k = torch.zeros(t.n_layers, B, t.n_kv, T, t.hs)
        self.v = torch.zeros(t.n_layers, B, t.n_kv, T, t.hs)


@torch.no_grad()
def step(t, tok, pos, cache):
    """Logits [B, V] for one token per row [B] at position pos, caching K/V;
    grouped heads attend without copying the cache (head h uses kv h/rep)."""
    B = tok.shape[0]
    x = t.emb[tok]
    rep = t.n_heads // t.n_kv
    c, s = t.cos[pos], t.sin[pos]

    def rope(z):
        a, b = z[..., 0::2], z[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2)
    for l in range(t.n_layers):
        h = t._rms(x, t.rms_att[l])
        q = rope((h @ t.wq[l].T).view(B, t.n_kv, rep, t.hs))
        cache.k[l, :, :, pos] = rope((h @ t.wk[l].T).view(B, t.n_kv, t.hs))
        cache.v[l, :, :, pos] = (h @ t.wv[l].T).view(B, t.n_kv, t.hs)
        k = cache.k[l, :, :, :pos + 1]
        v = cache.v[l, :, :, :pos + 1]
        a = torch.softmax((q @ k.transpose(-1, -2)) / (t.hs ** 0.5), -1)
        x = x + (a @ v).reshape(B, t.dim) @ t.wo[l].T
        h = t._rms(x, t.rms_ffn[l])
        x = x + (F.silu(h @ t.w1[l].T) * (h @ t.w3[l].T)) @ t.w2[l].T
    return t._rms(x, t.rms_final) @ t.wcls.T
