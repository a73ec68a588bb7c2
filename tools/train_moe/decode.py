"""Decode corpus rows (uint16 token ids, [N, LEN]) to text with the teacher's
vocabulary: byte tokens <0xNN> become their byte, BOS/EOS end a story (a
blank line between stories). Writes rows FIRST..LAST-1 to stdout.

  python3 decode.py heldout.u16 500 512 > text.txt
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from teacher import read_vocab  # noqa: E402


def piece_bytes(p):
    if len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">"):
        return bytes([int(p[3:5], 16)])
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("first", type=int)
    ap.add_argument("last", type=int)
    ap.add_argument("--len", type=int, default=256)
    ap.add_argument("--tokenizer", default="/work/shared/models/stories260K/tok512.bin")
    a = ap.parse_args()
    pieces, _ = read_vocab(a.tokenizer, 512)
    rows = np.fromfile(a.corpus, dtype="<u2").reshape(-1, a.len)[a.first:a.last]
    stories = []
    for row in rows:
        cur = b""
        for t in row[1:]:
            if t <= 2:
                if cur.strip():
                    stories.append(cur.strip())
                cur = b""
            else:
                cur += piece_bytes(pieces[t])
        if cur.strip():  # the row's last story, cut at the row's end
            stories.append(cur.strip())
    sys.stdout.buffer.write(b"\n\n".join(stories) + b"\n")


if __name__ == "__main__":
    main()
