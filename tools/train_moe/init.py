"""Start the student from the teacher so that the little CPU time here goes
into the MoE, not into relearning what the teacher knows:
- embeddings, head (a copy of the tied embedding), norms and attention of
  the teacher's 5 layers carry over exactly. The teacher's rope rotates
  adjacent pairs over whole 8-dim heads; glm4moe rotates NeoX pairs (i, i+4)
  over rope.dimension_count = head_dim dims, the same rotation once each
  head's q and k rows are permuted (0,2,4,6,1,3,5,7);
- layer 0 is the teacher's dense SwiGLU (172 units, zero-padded to 192);
- MoE layers 1-4 are the teacher's FFN cut into 32-unit chunks (units
  sorted by their mean contribution on teacher text): the top chunk is the
  shared expert, the other five seed the 16 routed experts (expert e gets
  chunk 1 + e % 5, with noise so that copies differ); with top-4 and
  expert_weights_scale 4 the routed part starts near the rest of the FFN;
- layer 5 and the MTP block start fresh, their output projections zero
  (layer 5 starts as the identity)."""
import torch

PERM = [0, 2, 4, 6, 1, 3, 5, 7]


@torch.no_grad()
def from_teacher(model, t, sample, seed):
    g = torch.Generator().manual_seed(seed + 1000)
    c = model.c
    assert c.dim == t.dim and c.head_dim == t.hs and c.n_head == t.n_heads and c.n_kv == t.n_kv
    model.embed.weight.copy_(t.emb)
    model.head.weight.copy_(t.wcls)
    model.norm.weight.copy_(t.rms_final)
    hs = t.hs

    def perm_rows(w, heads):
        idx = torch.cat([h * hs + torch.tensor(PERM) for h in range(heads)])
        return w[idx]
    # unit importance per layer: mean |silu(w1 h) * w3 h| * |w2[:, j]| on sample
    B, T = sample.shape
    x = t.emb[sample]
    imp = []
    for l in range(t.n_layers):
        # run the teacher layer to get the FFN input (same code path as Teacher.forward)
        h = t._rms(x, t.rms_att[l])
        q = (h @ t.wq[l].T).view(B, T, t.n_heads, hs).transpose(1, 2)
        k = (h @ t.wk[l].T).view(B, T, t.n_kv, hs).transpose(1, 2)
        v = (h @ t.wv[l].T).view(B, T, t.n_kv, hs).transpose(1, 2)
        q, k = t._rope(q, 0), t._rope(k, 0)
        from teacher import attend
        rep = t.n_heads // t.n_kv
        o = attend(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), True)
        x = x + o.transpose(1, 2).reshape(B, T, t.dim) @ t.wo[l].T
        h = t._rms(x, t.rms_ffn[l])
        act = torch.nn.functional.silu(h @ t.w1[l].T) * (h @ t.w3[l].T)
        imp.append(act.abs().mean((0, 1)) * t.w2[l].norm(dim=0))
        x = x + act @ t.w2[l].T
    for l in range(t.n_layers):
        b = model.blocks[l]
        b.attn_norm.weight.copy_(t.rms_att[l])
        b.ffn_norm.weight.copy_(t.rms_ffn[l])
        b.attn.q.weight.copy_(perm_rows(t.wq[l], t.n_heads))
        b.attn.k.weight.copy_(perm_rows(t.wk[l], t.n_kv))
        b.attn.v.weight.copy_(t.wv[l])
        b.attn.o.weight.copy_(t.wo[l])
        for lin in (b.attn.q, b.attn.k, b.attn.v):
            lin.bias.zero_()
        H = t.hidden
        order = torch.argsort(imp[l], descending=True)
        pad = c.ff - H
        w1 = torch.cat((t.w1[l][order], torch.zeros(pad, t.dim)))
        w3 = torch.cat((t.w3[l][order], torch.zeros(pad, t.dim)))
        w2 = torch.cat((t.w2[l][:, order], torch.zeros(t.dim, pad)), 1)
        if l < c.n_dense:
            b.ffn.gate.weight.copy_(w1)
            b.ffn.up.weight.copy_(w3)
            b.ffn.down.weight.copy_(w2)
            continue
        F = c.ff_exp
        m = b.ffn
        S = F * c.n_shared
        m.shared.gate.weight.copy_(w1[:S])
        m.shared.up.weight.copy_(w3[:S])
        m.shared.down.weight.copy_(w2[:, :S])
        n_chunks = (c.ff - S) // F
        for e in range(c.n_expert):
            ch = S + (e % n_chunks) * F
            noise = 0.0 if e < n_chunks else 0.05
            for dst, src in ((m.gate[e], w1[ch:ch + F]), (m.up[e], w3[ch:ch + F])):
                dst.copy_(src * (1 + noise * torch.randn(src.shape, generator=g)))
            m.down[e].copy_(w2[:, ch:ch + F])
        m.router.weight.copy_(0.02 * torch.randn(m.router.weight.shape, generator=g))
    for b in list(model.blocks[t.n_layers:]) + [model.mtp]:
        b.attn.o.weight.zero_()
        b.ffn.shared.down.weight.zero_()
        b.ffn.down.zero_()
