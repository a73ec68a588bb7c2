#!/usr/bin/env python3
"""batch_ceiling.py - what K batched slots can gain at most, from the routing.

A batched decode step of K members reads and computes each distinct routed
expert once for every member that chose it. Exact integer dot products
cannot share per-token work, so an expert chosen by m members still costs
m rows of arithmetic; what batching can save is the weight traffic (the
reads from the drive when streamed, the unpacking and cache traffic when
resident) and the dense products' per-step overheads.

Routing sources:
  TRACE.csv   a `# route_trace v1` file: its decode steps (phase 1); K users
              replay them from K offsets spread evenly over the decode part
              (user i starts at step i * n_decode / K and wraps), which is
              how bench_multi --route-trace replays it (four users of one
              real model at different points of their answers);
  uniform:X:k a router that draws k of X experts uniformly (the generated
              models' routers: their choices are independent of each other).

For K = 1..KMAX it prints the mean distinct experts per layer and step (U_K),
the choices per step (K * k) and two ceilings of the aggregate throughput of
K slots against one:
  - read-bound (streamed, every distinct expert read once a step, the
    dense weights resident and free): K * k / U_K;
  - compute-bound (resident), an Amdahl bound: a one-token step spends the
    share F (--expert-share) in routed-expert products and 1 - F elsewhere;
    the dense part is taken as free for extra members (its best case), and
    a distinct expert with m rows costs 1 + (m - 1) * R of a one-row expert
    (--row-cost R: 1 = no saving from sharing, the kernel's measured
    per-extra-row cost otherwise). Ceiling = K / ((1 - F) + F * C_K / k),
    C_K the mean cost per layer.

usage: batch_ceiling.py SOURCE [--kmax 4] [--expert-share F] [--row-cost R]
"""
import collections
import csv
import random
import sys


def load_decode(path):
    """The trace's decode steps: a list of {layer: [experts]}."""
    rows = [l for l in open(path) if not l.startswith("#")]
    gen = collections.defaultdict(dict)
    for r in csv.DictReader(rows):
        if r["phase"] != "1":
            continue
        gen[int(r["step"])].setdefault(int(r["layer"]), []).append(int(r["expert"]))
    return [gen[s] for s in sorted(gen)]


def uniform_steps(x, k, n_layer=48, n_steps=512, seed=1):
    rng = random.Random(seed)
    return [{l: rng.sample(range(x), k) for l in range(n_layer)} for _ in range(n_steps)]


def stats(steps, kmax, row_cost):
    """Per K: (mean union per layer-step, mean cost per layer-step, k)."""
    n = len(steps)
    layers = sorted(steps[0])
    k = len(steps[0][layers[0]])
    out = []
    for K in range(1, kmax + 1):
        offs = [i * n // K for i in range(K)]
        u_sum = c_sum = 0.0
        cnt = 0
        for s in range(n):
            for l in layers:
                m = collections.Counter()
                for o in offs:
                    m.update(steps[(o + s) % n][l])
                u_sum += len(m)
                c_sum += sum(1 + (c - 1) * row_cost for c in m.values())
                cnt += 1
        out.append((K, u_sum / cnt, c_sum / cnt, k))
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    src = argv[1]
    opts = {"--kmax": 4, "--expert-share": 0.5, "--row-cost": 1.0}
    i = 2
    while i < len(argv):
        if argv[i] not in opts or i + 1 >= len(argv):
            print("batch_ceiling.py: unknown or incomplete option %s" % argv[i], file=sys.stderr)
            return 2
        opts[argv[i]] = type(opts[argv[i]])(argv[i + 1])
        i += 2
    if src.startswith("uniform:"):
        _, x, k = src.split(":")
        steps = uniform_steps(int(x), int(k))
        name = "uniform %s of %s experts (simulated, 512 steps)" % (k, x)
    else:
        steps = load_decode(src)
        name = "%s: %d decode steps, %d layers" % (src, len(steps), len(steps[0]))
    F, R = opts["--expert-share"], opts["--row-cost"]
    print("# %s; expert share F = %.2f, extra-row cost R = %.2f" % (name, F, R))
    print("K  choices  distinct U_K  shared  read-bound ceiling  compute-bound ceiling")
    for K, u, c, k in stats(steps, opts["--kmax"], R):
        read = K * k / u
        comp = K / ((1 - F) + F * c / k)
        print("%d  %7d  %12.2f  %5.1f%%  %17.2fx  %20.2fx" %
              (K, K * k, u, 100.0 * (1 - u / (K * k)), read, comp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
