"""Routing structure of a trained student on held-out teacher text: per MoE
layer, the distinct experts a 256-token story uses, the hottest experts'
share of the picks, the share of picks already made for the previous token
(reuse distance 1) and the median reuse distance; and the next-layer guess:
layer L's output (the residual stream entering layer L+1), normalised with
layer L+1's FFN norm and put through layer L+1's router (scores + bias), its
top-k and top-2k recall of the experts layer L+1 actually picks.

  nice -n 19 /usr/bin/python3 route_stats.py --ckpt student.pt --heldout heldout.u16
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, MoE, Student  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--heldout", required=True)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--first", type=int, default=256, help="first held-out row used")
    a = ap.parse_args()
    torch.set_num_threads(1)
    ck = torch.load(a.ckpt)
    c = Config(**ck["config"])
    m = Student(c)
    m.load_state_dict(ck["model"])
    m.eval()
    x = torch.from_numpy(np.fromfile(a.heldout, dtype="<u2").astype(np.int64)
                         .reshape(-1, 256)[a.first:a.first + a.rows])
    B, T = x.shape
    k = c.top_k
    outs = []  # residual stream after each main layer
    with torch.no_grad():
        h = m.embed(x)
        for b in m.blocks:
            h = b(h)
            outs.append(h)
    moe = [(i, b) for i, b in enumerate(m.blocks) if isinstance(b.ffn, MoE)]
    print("| layer | distinct experts per story | top-2 experts' share | picked for the previous token too | median reuse distance |")
    print("|---|---|---|---|---|")
    for i, b in moe:
        sel = b.ffn.last_sel.view(B, T, k)
        distinct = np.mean([len(torch.unique(sel[r])) for r in range(B)])
        counts = torch.bincount(sel.reshape(-1), minlength=c.n_expert).float()
        top2 = counts.sort(descending=True).values[:2].sum() / counts.sum()
        prev = np.mean([len(set(sel[r, t].tolist()) & set(sel[r, t - 1].tolist())) / k
                        for r in range(B) for t in range(1, T)])
        dists = []
        for r in range(B):
            last = {}
            for t in range(T):
                for e in sel[r, t].tolist():
                    if e in last:
                        dists.append(t - last[e])
                    last[e] = t
        print(f"| {i} | {distinct:.1f} of {c.n_expert} | {100 * top2:.1f} % | {100 * prev:.1f} % | {np.median(dists):.0f} |")
    print()
    print(f"| layer L -> L+1 | top-{k} recall | top-{2 * k} recall |")
    print("|---|---|---|")
    with torch.no_grad():
        for (i, b), (j, nb) in zip(moe, moe[1:]):
            if j != i + 1:
                continue
            hn = nb.ffn_norm(outs[i]).reshape(-1, c.dim)
            sc = torch.sigmoid(nb.ffn.router(hn)) + nb.ffn.bias
            actual = nb.ffn.last_sel
            r1 = r2 = 0.0
            g1 = torch.topk(sc, k, -1).indices
            g2 = torch.topk(sc, 2 * k, -1).indices
            for t in range(actual.shape[0]):
                s = set(actual[t].tolist())
                r1 += len(s & set(g1[t].tolist())) / k
                r2 += len(s & set(g2[t].tolist())) / k
            n = actual.shape[0]
            print(f"| {i} -> {j} | {100 * r1 / n:.1f} % | {100 * r2 / n:.1f} % |")
    # a random router's reference: k/X and 2k/X
    print(f"\n(chance: top-{k} {100 * k / c.n_expert:.0f} %, top-{2 * k} {100 * 2 * k / c.n_expert:.0f} %)")
    # does the choice matter: perplexity with every MoE layer's picks replaced
    # by k experts at random (weights from the same scores, renormalised)
    def ppl():
        with torch.no_grad():
            lg, _ = m(x, mtp=False)
        return torch.exp(torch.nn.functional.cross_entropy(
            lg[:, :-1].reshape(-1, c.vocab), x[:, 1:].reshape(-1))).item()
    learned = ppl()
    for mo in m.moe_layers():
        mo.random_route = torch.Generator().manual_seed(1)
    rnd = ppl()
    print(f"\nperplexity on these rows: learned routing {learned:.4f}, "
          f"{k} experts at random {rnd:.4f} ({100 * (rnd / learned - 1):+.1f} %)")


if __name__ == "__main__":
    main()
