"""Routing structure of a `# route_trace v1` file (any model's), per layer:
distinct experts over the trace, the two hottest experts' share of the
picks (against 2/X for even use), the share of picks already made for the
previous step (against k/X by chance), the median reuse distance; and the
next layer guessed from this layer's choice by next_guess.c's rule (online,
learning as the trace goes: expert b ranked by max over the step's experts a
of n(a -> b) / n(a), only transitions seen twice with a share >= 0.5), its
recall of the next layer's experts at budgets k and 2k (an empty guess
recalls nothing). Decode steps only (phase 1) for the guesses, as the
streamer guesses one token at a time.

  /usr/bin/python3 trace_stats.py tests/data/trained/glm4moe-stories.route.csv
"""
import collections
import sys

import numpy as np


def read(path):
    hdr = {}
    steps = collections.defaultdict(dict)  # step -> layer -> [experts by slot]
    phase = {}
    for line in open(path):
        if line.startswith("#"):
            for kv in line[1:].split():
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    hdr[k] = v
            continue
        if not line[0].isdigit():
            continue
        f = line.split(",")
        st, ly, slot, e = int(f[2]), int(f[3]), int(f[4]), int(f[5])
        phase[st] = int(f[1])
        steps[st].setdefault(ly, {})[slot] = e
    X, K, L = int(hdr["n_expert"]), int(hdr["n_expert_used"]), int(hdr["n_layer"])
    order = [s for s in sorted(steps) if len(steps[s]) == L]  # whole steps only
    sel = [[[steps[s][l][j] for j in sorted(steps[s][l])] for l in range(L)] for s in order]
    return sel, [phase[s] for s in order], X, K, L


def guess(n_ab, n_a, S, budget):
    score = {}
    for a in S:
        if n_a[a] == 0:
            continue
        for b, c in n_ab[a].items():
            if c >= 2:
                score[b] = max(score.get(b, 0.0), c / n_a[a])
    ok = sorted((b for b, s in score.items() if s >= 0.5), key=lambda b: (-score[b], b))
    return ok[:budget]


def main():
    sel, phase, X, K, L = read(sys.argv[1])
    T = len(sel)
    print(f"{sys.argv[1]}: {T} steps, {L} layers, {X} experts, top-{K}")
    print()
    print("| layer | distinct experts | top-2 experts' share | picked for the previous step too | median reuse distance |")
    print("|---|---|---|---|---|")
    tot = [0, 0.0, 0.0, []]
    for l in range(L):
        picks = [e for t in range(T) for e in sel[t][l]]
        cnt = np.bincount(picks, minlength=X)
        top2 = np.sort(cnt)[-2:].sum() / cnt.sum()
        prev = np.mean([len(set(sel[t][l]) & set(sel[t - 1][l])) / K for t in range(1, T)])
        last, d = {}, []
        for t in range(T):
            for e in sel[t][l]:
                if e in last:
                    d.append(t - last[e])
                last[e] = t
        print(f"| {l} | {int((cnt > 0).sum())} of {X} | {100 * top2:.1f} % | {100 * prev:.1f} % | "
              f"{np.median(d):.0f} |")
    print(f"\n(even use: top-2 share {200 / X:.1f} %; chance of a repeat: {100 * K / X:.1f} %)")
    print()
    print(f"| layer L -> L+1 | id guesses: top-{K} recall | top-{2 * K} recall | steps with a guess |")
    print("|---|---|---|---|")
    n_ab = [[collections.Counter() for _ in range(X)] for _ in range(L - 1)]
    n_a = [np.zeros(X, int) for _ in range(L - 1)]
    r1 = np.zeros(L - 1)
    r2 = np.zeros(L - 1)
    has = np.zeros(L - 1)
    n = 0
    for t in range(T):
        dec = phase[t] == 1
        n += dec
        for l in range(L - 1):
            S, nxt = sel[t][l], set(sel[t][l + 1])
            if dec:
                g2 = guess(n_ab[l], n_a[l], S, 2 * K)
                r1[l] += len(nxt & set(g2[:K])) / K
                r2[l] += len(nxt & set(g2)) / K
                has[l] += bool(g2)
            for a in S:
                n_a[l][a] += 1
                for b in nxt:
                    n_ab[l][a][b] += 1
    for l in range(L - 1):
        print(f"| {l} -> {l + 1} | {100 * r1[l] / n:.1f} % | {100 * r2[l] / n:.1f} % | "
              f"{100 * has[l] / n:.0f} % |")
    print(f"\n(chance: top-{K} {100 * K / X:.0f} %, top-{2 * K} {100 * 2 * K / X:.0f} %; "
          f"{n} decode steps)")


if __name__ == "__main__":
    main()
