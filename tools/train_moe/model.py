"""The student: glm4moe as llama.cpp computes it (../shared/ARCHS.md section
4): pre-norm attention with q/k/v biases, NeoX rope over the first half of
each head, scale 1/sqrt(head_dim); the FFN pre-norm (post_attention_norm);
layer 0 a dense SwiGLU, the rest 16-expert MoE layers with a sigmoid router,
a selection-only bias (exp_probs_b, moved by the aux-loss-free update, not by
gradients), top-k weights from the unbiased scores renormalised and scaled,
beside an ungated shared expert (see init.py for how it starts from the
teacher). One MTP (nextn) block predicts the token
after next from the final hidden state and the next token's embedding:
eh_proj([enorm(embed(x[t+1])), hnorm(h[t])]), a MoE block,
shared_head_norm, then the shared output head."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from teacher import attend


@dataclass
class Config:
    vocab: int = 512
    dim: int = 64
    n_layer: int = 6          # main layers; the MTP block comes after them
    n_dense: int = 1
    n_head: int = 8           # the teacher's heads, so its attention carries over
    n_kv: int = 4
    head_dim: int = 8
    n_rot: int = 8
    ff: int = 192             # the dense layer's SwiGLU width (the teacher's 172, padded)
    n_expert: int = 16
    top_k: int = 4
    ff_exp: int = 32
    n_shared: int = 4         # the shared expert: 128 units (the teacher FFN's most used)
    scale: float = 2.0        # expert_weights_scale: 4 picks of 2 chunk kinds at ~1 each
    rope_base: float = 10000.0
    eps: float = 1e-5
    ctx: int = 512


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.q = nn.Linear(c.dim, c.n_head * c.head_dim, bias=True)
        self.k = nn.Linear(c.dim, c.n_kv * c.head_dim, bias=True)
        self.v = nn.Linear(c.dim, c.n_kv * c.head_dim, bias=True)
        self.o = nn.Linear(c.n_head * c.head_dim, c.dim, bias=False)
        half = c.n_rot // 2
        freq = 1.0 / (c.rope_base ** (torch.arange(half).float() * 2 / c.n_rot))
        ang = torch.arange(c.ctx).float()[:, None] * freq[None, :]
        self.register_buffer("cos", torch.cos(ang), persistent=False)
        self.register_buffer("sin", torch.sin(ang), persistent=False)

    def rope(self, x):
        # NeoX: pairs (i, i + n_rot/2) within the first n_rot dims
        T = x.shape[2]
        h = self.c.n_rot // 2
        c, s = self.cos[:T], self.sin[:T]
        a, b, rest = x[..., :h], x[..., h:2 * h], x[..., 2 * h:]
        return torch.cat((a * c - b * s, a * s + b * c, rest), -1)

    def forward(self, x):
        B, T, _ = x.shape
        c = self.c
        q = self.q(x).view(B, T, c.n_head, c.head_dim).transpose(1, 2)
        k = self.k(x).view(B, T, c.n_kv, c.head_dim).transpose(1, 2)
        v = self.v(x).view(B, T, c.n_kv, c.head_dim).transpose(1, 2)
        q, k = self.rope(q), self.rope(k)
        rep = c.n_head // c.n_kv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        o = attend(q, k, v, True)
        return self.o(o.transpose(1, 2).reshape(B, T, -1))


class SwiGLU(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class MoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        X, E, Fe = c.n_expert, c.dim, c.ff_exp
        self.router = nn.Linear(E, X, bias=False)
        self.register_buffer("bias", torch.zeros(X))  # exp_probs_b
        s = 1.0 / math.sqrt(E)
        self.gate = nn.Parameter(torch.randn(X, Fe, E) * s)
        self.up = nn.Parameter(torch.randn(X, Fe, E) * s)
        self.down = nn.Parameter(torch.randn(X, E, Fe) / math.sqrt(Fe))
        self.shared = SwiGLU(E, Fe * c.n_shared)
        self.last_load = None  # [X] tokens routed per expert in the last call
        self.last_balance = None
        self.last_topk_share = 0.0
        self.random_route = None  # a torch.Generator: pick experts at random (route_stats.py)
        self.last_token_entropy = 0.0

    def forward(self, x):
        c = self.c
        shp = x.shape
        x2 = x.reshape(-1, shp[-1])
        scores = torch.sigmoid(self.router(x2))                  # [N, X]
        sel = torch.topk(scores + self.bias, c.top_k, -1).indices  # [N, k]
        if self.random_route is not None:  # a measurement: k experts at random instead
            sel = torch.topk(torch.rand(scores.shape, generator=self.random_route), c.top_k,
                             -1).indices
        w = scores.gather(1, sel)
        w = w / w.sum(-1, keepdim=True) * c.scale
        G = torch.zeros_like(scores).scatter(1, sel, w)          # [N, X]
        # every expert on every token (dense; cheap at this size), masked by G
        g = torch.einsum("ne,xfe->nxf", x2, self.gate)
        u = torch.einsum("ne,xfe->nxf", x2, self.up)
        h = F.silu(g) * u * G[:, :, None]
        y = torch.einsum("nxf,xef->ne", h, self.down)
        self.last_sel = sel.detach()  # [N, k] for the routing measurements
        with torch.no_grad():
            self.last_topk_share = (scores.gather(1, sel).sum(-1) / scores.sum(-1)).mean().item()
            p = scores / scores.sum(-1, keepdim=True)
            # per-token routing entropy in bits (log2 16 = 4 when the scores are flat)
            self.last_token_entropy = -(p * p.clamp_min(1e-12).log2()).sum(-1).mean().item()
            self.last_load = torch.zeros(c.n_expert).scatter_add_(
                0, sel.reshape(-1), torch.ones(sel.numel()))
        # sequence-free balance loss (DeepSeek-V3's, over the batch): X * sum f_i P_i
        f = self.last_load / sel.numel()
        P = (scores / scores.sum(-1, keepdim=True)).mean(0)
        self.last_balance = c.n_expert * (f * P).sum()
        return (y + self.shared(x2)).reshape(shp)


class Block(nn.Module):
    def __init__(self, c, dense):
        super().__init__()
        self.attn_norm = RMSNorm(c.dim, c.eps)
        self.attn = Attention(c)
        self.ffn_norm = RMSNorm(c.dim, c.eps)  # post_attention_norm
        self.ffn = SwiGLU(c.dim, c.ff) if dense else MoE(c)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.ffn(self.ffn_norm(x))


class Student(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.vocab, c.dim)
        nn.init.normal_(self.embed.weight, std=0.5)
        self.blocks = nn.ModuleList(Block(c, i < c.n_dense) for i in range(c.n_layer))
        self.norm = RMSNorm(c.dim, c.eps)
        self.head = nn.Linear(c.dim, c.vocab, bias=False)
        # MTP
        self.enorm = RMSNorm(c.dim, c.eps)
        self.hnorm = RMSNorm(c.dim, c.eps)
        self.eh_proj = nn.Linear(2 * c.dim, c.dim, bias=False)
        self.mtp = Block(c, False)
        self.mtp_norm = RMSNorm(c.dim, c.eps)  # shared_head_norm

    def moe_layers(self):
        return [b.ffn for b in list(self.blocks) + [self.mtp] if isinstance(b.ffn, MoE)]

    def forward(self, tok, mtp=True):
        """Logits [B, T, V] for the next token and, with mtp, logits
        [B, T-1, V] for the token after next (position t uses tok[t+1])."""
        x = self.embed(tok)
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.norm(x))
        if not mtp:
            return logits, None
        e = self.embed(tok[:, 1:])
        m = self.eh_proj(torch.cat((self.enorm(e), self.hnorm(x[:, :-1])), -1))
        m = self.mtp(m)
        return logits, self.head(self.mtp_norm(m))
