"""Sample the teacher into a corpus: N sequences of T tokens, each starting
with BOS (1) and sampled at temperature TEMP with torch's generator seeded by
SEED; the teacher's own BOS between stories is kept (it starts the next
story). Writes uint16 tokens, row-major [N, T], to OUT.

  nice -n 19 python3 gen_corpus.py --seed 1 --n 20480 --out corpus.u16
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from teacher import Cache, Teacher, step  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/work/shared/models/stories260K/stories260K.bin")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=4096, help="sequences")
    ap.add_argument("--len", type=int, default=256, help="tokens per sequence, BOS included")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--temp", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t = Teacher(a.model)
    g = torch.Generator().manual_seed(a.seed)
    f = open(a.out, "wb")
    t0 = time.time()
    for b0 in range(0, a.n, a.batch):
        B = min(a.batch, a.n - b0)
        tok = torch.ones(B, dtype=torch.long)
        seq = [tok[:, None]]
        cache = Cache(t, B, a.len)
        for pos in range(a.len - 1):
            p = torch.softmax(step(t, tok, pos, cache) / a.temp, -1)
            tok = torch.multinomial(p, 1, generator=g)[:, 0]
            seq.append(tok[:, None])
        f.write(torch.cat(seq, 1).numpy().astype("<u2").tobytes())
        f.flush()
        done = b0 + B
        print(f"{done}/{a.n} sequences, {done * a.len} tokens, {time.time() - t0:.0f} s",
              file=sys.stderr, flush=True)
    f.close()


if __name__ == "__main__":
    main()
