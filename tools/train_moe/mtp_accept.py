"""The MTP head as a draft: greedy text from the main model after a prompt,
then at each position t the MTP head's argmax (from h[t] and the token
x[t+1]) against the greedy token x[t+2]: the share accepted. Also an n-gram
draft (the token that followed the last earlier occurrence of the current
bigram) on the same text.

  nice -n 19 /usr/bin/python3 mtp_accept.py --ckpt student.pt --n 128
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Student  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--n", type=int, default=128)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ck = torch.load(a.ckpt)
    m = Student(Config(**ck["config"]))
    m.load_state_dict(ck["model"])
    m.eval()
    seq = [1]  # BOS: the model's own story
    with torch.no_grad():
        for _ in range(a.n):
            lg, _ = m(torch.tensor([seq]), mtp=False)
            seq.append(int(lg[0, -1].argmax()))
        _, lm = m(torch.tensor([seq]))
    draft = lm[0].argmax(-1).tolist()  # draft[t] guesses seq[t + 2]
    ok = sum(draft[t] == seq[t + 2] for t in range(len(seq) - 2))
    print(f"MTP draft accepted: {ok}/{len(seq) - 2} = {100 * ok / (len(seq) - 2):.1f} %")
    hit = tried = 0
    for t in range(2, len(seq) - 1):
        key = (seq[t - 1], seq[t])
        guess = None
        for u in range(t - 1, 0, -1):
            if (seq[u - 1], seq[u]) == key:
                guess = seq[u + 1]
                break
        if guess is not None:
            tried += 1
            hit += guess == seq[t + 1]
    print(f"bigram n-gram draft: proposed at {tried}/{len(seq) - 3} positions, accepted {hit} "
          f"({100 * hit / max(tried, 1):.1f} % of proposals)")


if __name__ == "__main__":
    main()
