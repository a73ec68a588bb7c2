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

With --guess, also the same with sluice's learned next-layer guesses
(src/experts/next_guess.c, on under --route-trace): a table of how often
expert a at layer L was followed by expert b at layer L+1 in the same
token, learned only from the steps already replayed (the prompt's tokens
one by one, then each decoded token after it is done); after layer L's set,
up to 2 of the experts b with max over a in the set of n(a->b)/n(a) >= 0.5
and n(a->b) >= 2 that are not cached are read ahead into the pool (as most
recently used) while layer L computes. A right guess is then a hit (the
floor assumes it landed in time: reads ahead use the drive while it is
idle); a wrong one costs a read and evicts. Printed: guesses per token,
share right, share of the misses guessed, and the floor again.

With --split, the floor of computing a miss's gate and up products as soon
as they land, before its down rows (gate and up: 2/3 of an expert's compute
and of its bytes, read first).

usage: replay_floor.py [--guess] [--split] TRACE [C P N COMP EXPERT_SHARE EXPERT_MB RATE...]
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


class Guess:
    """The learned next-layer guesses (next_guess.c), with their scores."""
    MIN_COUNT, MIN_SHARE, READS = 2, 0.5, 2

    def __init__(self):
        self.pair = collections.defaultdict(collections.Counter)  # (l, a) -> Counter(b)
        self.frm = collections.Counter()                          # (l, a)
        self.guessed = self.right = self.missed = 0

    def learn(self, step, n_layer):
        for l in range(n_layer - 1):
            for a in step[l]:
                self.frm[(l, a)] += 1
                for b in step[l + 1]:
                    self.pair[(l, a)][b] += 1

    def predict(self, l, ids):
        sc = {}
        for a in ids:
            na = self.frm[(l, a)]
            for b, v in self.pair[(l, a)].items():
                if v >= self.MIN_COUNT and v / na > sc.get(b, 0.0):
                    sc[b] = v / na
        return sorted((b for b in sc if sc[b] >= self.MIN_SHARE), key=lambda b: (-sc[b], b))


def batch(steps, n_layer, cache, first, n, usage=None, guess=None):
    """Per layer (hits, misses) of a batch of n tokens from step first."""
    out = []
    pf = set()
    for l in range(n_layer):
        ids = sorted({e for t in range(n) for e in steps[(first + t) % len(steps)][l]})
        m = 0
        for e in ids:
            if usage is not None:
                usage[(l, e)] += 1
            hit = cache.use((l, e))
            if guess is not None and n == 1:
                if (l, e) in pf:
                    guess.right += 1
                elif not hit:
                    guess.missed += 1
            m += not hit
        out.append((len(ids) - m, m))
        pf = set()
        if guess is not None and n == 1 and l + 1 < n_layer:
            for b in guess.predict(l, ids):
                if len(pf) >= Guess.READS:
                    break
                if (l + 1, b) not in cache.od:
                    pf.add((l + 1, b))
                    cache.use((l + 1, b))
            guess.guessed += len(pf)
    if guess is not None:
        for t in range(n):
            guess.learn(steps[(first + t) % len(steps)], n_layer)
    return out


def run(steps, n_layer, cache, p, n, usage=None, after_prompt=None, guess=None):
    pm = sum(m for _, m in batch(steps, n_layer, cache, 0, p, usage, guess))
    if after_prompt:
        after_prompt(cache)
    return pm, [batch(steps, n_layer, cache, p + t, 1, usage, guess) for t in range(n)]


def stall(layers, t_io, c, split=False):
    """The compute's wait in one token: see the module comment."""
    s = 0.0
    for h, m in layers:
        t = h * c
        for i in range(1, m + 1):
            if split:  # gate and up land a third of a read before the down rows
                gu = (i - 1.0 / 3.0) * t_io
                if gu > t:
                    s += gu - t
                    t = gu
                t += c * 2.0 / 3.0
                if i * t_io > t:
                    s += i * t_io - t
                    t = i * t_io
                t += c / 3.0
                continue
            if i * t_io > t:
                s += i * t_io - t
                t = i * t_io
            t += c
    return s


def main():
    a = sys.argv[1:]
    use_guess = "--guess" in a
    split = "--split" in a
    a = [x for x in a if x not in ("--guess", "--split")]
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
    def floors(d, what):
        for r in rates:
            t_io = mb * 1e6 / (r * 1048576.0) * 1e3
            for sp in ([False, True] if split else [False]):
                s = sum(stall(t, t_io, c, sp) for t in d) / len(d)
                print("%s%s floor at %.0f MiB/s (%.3f ms per expert read, %.3f ms per expert "
                      "computed): stall %.1f ms/token, %.1f %% of the bound 1/%.2f ms"
                      % (what, " + gate/up early" if sp else "", r, t_io, c, s,
                         100 * comp / (comp + s), comp))

    floors(dec, "in-layer overlap")
    if use_guess:
        g = Guess()
        pmg, decg = run(steps, n_layer, Lru(cap), p, n, guess=g)
        miss = per(decg)
        print("learned guesses (cold): prompt misses %5d, decode misses %.2f/token (%.1f %% fewer); "
              "%.2f guessed a token (%.2f a layer), %.1f %% right, %.1f %% of the misses guessed; "
              "drive reads a token %.2f (demand + guesses)"
              % (pmg, miss, 100 * (1 - miss / per(dec)), g.guessed / n,
                 g.guessed / n / (n_layer - 1), 100 * g.right / max(g.guessed, 1),
                 100 * g.right / max(g.right + g.missed, 1), miss + g.guessed / n))
        floors(decg, "with learned guesses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
