"""Start the student from the teacher so that the little CPU time here goes
into the MoE, not into relearning what the teacher knows:
- embeddings, head (a copy of the tied embedding), norms and attention of
  the teacher's 5 layers carry over exactly. The teacher's rope rotates
  adjacent pairs over whole 8-dim heads; glm4moe rotates NeoX pairs (i, i+4)
  over rope.dimension_count = head_dim dims, the same rotation once each
  head's q and k rows are permuted (0,2,4,6,1,3,5,7);
- layer 0 is the teacher's dense SwiGLU (172 units, zero-padded to 192);
- from_teacher (--init-mode chunks, the first files): MoE layers 1-4 are
  the teacher's FFN cut into 32-unit chunks (units sorted by their mean
  contribution on teacher text, padded to 192): the top four chunks are the
  shared expert (n_shared 4), the other two seed the 16 routed experts
  (expert e gets chunk e % 2, 5 % noise on copies), routers random; every
  expert is then nearly the same, so which one is picked barely matters;
- moefy (--init-mode moefy) gives each routed expert its own units and
  fits the routers to them (below);
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
    imp = [act.abs().mean(0) * t.w2[l].norm(dim=0)
           for l, (_, act) in enumerate(teacher_ffn_stats(t, sample))]
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


def teacher_ffn_stats(t, sample):
    """Per teacher layer: the FFN input h [N, D] and the units' activations
    silu(w1 h) * (w3 h) [N, H] on the sample's tokens."""
    from teacher import attend
    B, T = sample.shape
    hs = t.hs
    x = t.emb[sample]
    out = []
    for l in range(t.n_layers):
        h = t._rms(x, t.rms_att[l])
        q = (h @ t.wq[l].T).view(B, T, t.n_heads, hs).transpose(1, 2)
        k = (h @ t.wk[l].T).view(B, T, t.n_kv, hs).transpose(1, 2)
        v = (h @ t.wv[l].T).view(B, T, t.n_kv, hs).transpose(1, 2)
        q, k = t._rope(q, 0), t._rope(k, 0)
        rep = t.n_heads // t.n_kv
        o = attend(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), True)
        x = x + o.transpose(1, 2).reshape(B, T, t.dim) @ t.wo[l].T
        h = t._rms(x, t.rms_ffn[l])
        act = torch.nn.functional.silu(h @ t.w1[l].T) * (h @ t.w3[l].T)
        out.append((h.reshape(-1, t.dim), act.reshape(-1, t.hidden)))
        x = x + act @ t.w2[l].T
    return out


def balanced_kmeans(feat, k, g, iters=30):
    """Cluster the rows of feat (unit vectors) into k clusters of at most
    ceil(n/k) rows by cosine similarity: greedy capacity-bounded assignment
    (most similar pairs first), centroids re-estimated each round."""
    n = feat.shape[0]
    cap = -(-n // k)
    cent = feat[torch.randperm(n, generator=g)[:k]].clone()
    assign = torch.zeros(n, dtype=torch.long)
    for _ in range(iters):
        sim = feat @ cent.T
        order = torch.argsort(sim.reshape(-1), descending=True)
        assign.fill_(-1)
        size = [0] * k
        left = n
        for o in order.tolist():
            u, c = divmod(o, k)
            if assign[u] >= 0 or size[c] >= cap:
                continue
            assign[u] = c
            size[c] += 1
            left -= 1
            if left == 0:
                break
        for c in range(k):
            m = feat[assign == c].sum(0)
            cent[c] = m / (m.norm() + 1e-9)
    return assign


@torch.no_grad()
def moefy(model, t, sample, seed, log=print):
    """MoEfication: the attention, embeddings and layer 0 as from_teacher;
    in MoE layers 1-4 the teacher FFN's units split in two: the S units with
    the largest mean contribution (|act| x |down column|) on teacher text form
    the shared expert (S = ff_exp x n_shared), the rest are clustered by
    co-activation (balanced k-means on their contributions' correlation over
    the sample's tokens) into the 16 routed experts, so experts hold distinct
    units; an expert's unused rows start small and random with a zero down
    projection. Its down projection is scaled by top_k / expert_weights_scale
    so that a pick weighted 1/top_k of the scale adds its units' full output.
    Each router is then fitted (logistic regression on the FFN input) to
    name, per token, the top_k clusters carrying the most contribution. Layer
    5 and the MTP block start fresh (zero output projections) with routers of
    unit-scale logits."""
    from_teacher(model, t, sample, seed)  # attention, norms, layer 0, fresh blocks
    g = torch.Generator().manual_seed(seed + 2000)
    c = model.c
    stats = teacher_ffn_stats(t, sample)
    S = c.ff_exp * c.n_shared
    X, Fe, K = c.n_expert, c.ff_exp, c.top_k
    for l in range(c.n_dense, t.n_layers):
        m = model.blocks[l].ffn
        h, act = stats[l]
        contrib = act.abs() * t.w2[l].norm(dim=0)
        order = torch.argsort(contrib.mean(0), descending=True)
        shared, rest = order[:S], order[S:]
        m.shared.gate.weight.copy_(t.w1[l][shared])
        m.shared.up.weight.copy_(t.w3[l][shared])
        m.shared.down.weight.copy_(t.w2[l][:, shared])
        f = contrib[:, rest]
        f = f - f.mean(0)
        f = (f / (f.norm(dim=0) + 1e-9)).T
        assign = balanced_kmeans(f, X, g)
        mass = torch.zeros(h.shape[0], X)
        for e in range(X):
            units = rest[assign == e]
            n = len(units)
            assert n <= Fe
            gate = torch.randn(Fe, t.dim, generator=g) * (0.5 / t.dim ** 0.5)
            up = torch.randn(Fe, t.dim, generator=g) * (0.5 / t.dim ** 0.5)
            down = torch.zeros(t.dim, Fe)
            gate[:n], up[:n] = t.w1[l][units], t.w3[l][units]
            down[:, :n] = t.w2[l][:, units] * (K / c.scale)
            m.gate[e].copy_(gate)
            m.up[e].copy_(up)
            m.down[e].copy_(down)
            mass[:, e] = contrib[:, units].sum(1)
        target = torch.zeros_like(mass).scatter(1, torch.topk(mass, K, -1).indices, 1.0)
        acc, share = fit_router(m, h, target, mass)
        load = target.sum(0) / target.sum()
        ent = -(load[load > 0] * load[load > 0].log2()).sum().item()
        log(f"layer {l}: shared {S} units, routed {len(rest)} in clusters of "
            f"{int(torch.bincount(assign).min())}-{int(torch.bincount(assign).max())}; "
            f"target load entropy {ent:.3f} bits; router names {100 * acc:.1f} % of the "
            f"target picks; routed mass kept by the target picks {100 * share:.1f} %")
    for b in list(model.blocks[t.n_layers:]) + [model.mtp]:
        b.ffn.router.weight.copy_(torch.randn(b.ffn.router.weight.shape, generator=g)
                                  / c.dim ** 0.5)


def fit_router(m, h, target, mass, steps=400):
    """Logistic regression of the sigmoid router on the FFN input h [N, D]
    towards the multi-hot target picks; returns the share of target picks
    in the router's top-k and the routed mass the target picks carry."""
    with torch.enable_grad():
        w = torch.zeros_like(m.router.weight).requires_grad_(True)
        opt = torch.optim.Adam([w], lr=0.05)
        for _ in range(steps):
            loss = torch.nn.functional.binary_cross_entropy_with_logits(h @ w.T, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
    m.router.weight.copy_(w.detach())
    K = m.c.top_k
    pick = torch.topk(h @ w.detach().T, K, -1).indices
    acc = target.gather(1, pick).sum() / target.sum()
    share = (mass * target).sum() / mass.sum()
    return acc.item(), share.item()
