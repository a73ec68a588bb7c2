#!/usr/bin/env python3
"""replay_floor.py - what a route trace allows, by simulation of the cache.

Replays a `# route_trace v1` file as `sluice run --route-trace` does with a
prompt of P tokens in one batch and then N decoded tokens (token t of the
run takes step t of the trace, wrapping; the prompt's steps other than its
last replay the last prompt step's choice on the last layer), through one
LRU pool of C experts for all layers (the streamer's default), each layer's
set in ascending id order. Prints:

  - misses of the prompt batch and per decoded token, cold;
  - the same after a warm start that preloaded the run's own C hottest
    experts before the prompt (a perfect history), and after that hot set
    is put back once the prompt is done (a preload that may evict);
  - the in-layer overlap floor of the decode stall: per layer, the hits are
    computed while the misses are read one after another at the drive's
    rate, and each miss is computed as soon as it lands (what
    sl_streamer_next does); a stall is the time the compute waits. With
    compute per token COMP ms, of which the experts take a share EXPERT_SHARE
    spread evenly over the top-k experts of every layer, and EXPERT_MB per
    expert read at RATE MiB/s.

usage: replay_floor.py TRACE [C P N COMP EXPERT_SHARE EXPERT_MB RATE...]
"""
import collections
import csv
import sys


def load(path):
    rows = [l for l in open(path) if not l.startswith("#")]
    prompt, gen = collections.defaultdict(dict), collections.defaultdict(dict)
    for r in csv.DictReader(rows):
        d = prompt if r["phase"] == "0" else gen
        d[int(r["step"])].setdefault(int(r["layer"]), []).append(int(r["expert"]))
    steps = [prompt[s] for s in sorted(prompt)] + [gen[s] for s in sorted(gen)]
    n_layer = 1 + max(l for s in steps for l in s)
    last = steps[len(prompt) - 1][n_layer - 1]
    for s in range(len(prompt)):
        steps[s].setdefault(n_layer - 1, last)
    return steps, n_layer


class Lru:
    def __init__(self, cap):
        self.cap, self.od = cap, collections.OrderedDict()

    def use(self, k):
        """True on a hit; a miss evicts the least recently used."""
        if k in self.od:
            self.od.move_to_end(k)
            return True
        if len(self.od) >= self.cap:
            self.od.popitem(last=False)
        self.od[k] = 1
        return False


def batch(steps, n_layer, cache, first, n, usage=None):
    """Per layer (hits, misses) of a batch of n tokens from step first."""
    out = []
    for l in range(n_layer):
        ids = sorted({e for t in range(n) for e in steps[(first + t) % len(steps)][l]})
        m = 0
        for e in ids:
            if usage is not None:
                usage[(l, e)] += 1
            m += not cache.use((l, e))
        out.append((len(ids) - m, m))
    return out


def run(steps, n_layer, cache, p, n, usage=None, after_prompt=None):
    pm = sum(m for _, m in batch(steps, n_layer, cache, 0, p, usage))
    if after_prompt:
        after_prompt(cache)
    return pm, [batch(steps, n_layer, cache, p + t, 1, usage) for t in range(n)]


def stall(layers, t_io, c):
    """The compute's wait in one token: see the module comment."""
    s = 0.0
    for h, m in layers:
        t = h * c
        for i in range(1, m + 1):
            if i * t_io > t:
                s += i * t_io - t
                t = i * t_io
            t += c
    return s


def main():
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        return 2
    steps, n_layer = load(a[0])
    cap = int(a[1]) if len(a) > 1 else 1536
    p = int(a[2]) if len(a) > 2 else 42
    n = int(a[3]) if len(a) > 3 else 100
    comp = float(a[4]) if len(a) > 4 else 74.86
    share = float(a[5]) if len(a) > 5 else 0.60
    mb = float(a[6]) if len(a) > 6 else 3.06
    rates = [float(x) for x in a[7:]] or [2653.0]
    k = len(steps[p % len(steps)][0])
    usage = collections.Counter()
    pm, dec = run(steps, n_layer, Lru(cap), p, n, usage)
    per = lambda d: sum(m for t in d for _, m in t) / len(d)
    print("cache %d experts, prompt %d tokens, %d decoded, top-%d, %d layers" % (cap, p, n, k, n_layer))
    print("cold:                          prompt misses %5d, decode misses %.2f/token" % (pm, per(dec)))
    hot = [key for key, _ in usage.most_common(cap)]

    def preloaded():
        c = Lru(cap)
        for key in reversed(hot):
            c.use(key)
        return c

    pm2, dec2 = run(steps, n_layer, preloaded(), p, n)
    print("warm (hot set before prompt):  prompt misses %5d, decode misses %.2f/token" % (pm2, per(dec2)))

    def refill(c):
        for key in reversed(hot):
            c.use(key)

    pm3, dec3 = run(steps, n_layer, preloaded(), p, n, after_prompt=refill)
    print("warm + hot set after prompt:   prompt misses %5d, decode misses %.2f/token "
          "(%.1f %% fewer than cold)" % (pm3, per(dec3), 100 * (1 - per(dec3) / per(dec))))
    distinct = {(l, e) for t in range(n) for l in range(n_layer)
                for e in steps[(p + t) % len(steps)][l]}
    print("distinct experts the %d decoded tokens use: %d (%.2fx the cache)"
          % (n, len(distinct), len(distinct) / cap))
    c = comp * share / (k * n_layer)
    for r in rates:
        t_io = mb * 1e6 / (r * 1048576.0) * 1e3
        s = sum(stall(t, t_io, c) for t in dec) / len(dec)
        print("in-layer overlap floor at %.0f MiB/s (%.3f ms per expert read, %.3f ms per expert "
              "computed): stall %.1f ms/token, %.1f %% of the bound 1/%.2f ms"
              % (r, t_io, c, s, 100 * comp / (comp + s), comp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
