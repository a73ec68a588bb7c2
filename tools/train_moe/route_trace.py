"""Export the trained student's routing on held-out teacher text as a
`# route_trace v1` file (src/experts/route_trace.h) for `sluice run
--route-trace`: its MoE layers (1..5) renumbered 0..4, so that it replays on
a generated model of 5 MoE layers, 16 experts, top-4 at any expert size.
Steps: one held-out row's tokens in order, the first --prompt as phase 0.
Weights: each token's top-4 sigmoid scores renormalised to sum 1 (before
expert_weights_scale), slots by falling weight.

  nice -n 19 /usr/bin/python3 route_trace.py --ckpt student.pt \
      --heldout heldout.u16 --row 300 --out glm4moe-stories.route.csv
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
    ap.add_argument("--row", type=int, default=300)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ck = torch.load(a.ckpt)
    c = Config(**ck["config"])
    m = Student(c)
    m.load_state_dict(ck["model"])
    m.eval()
    x = torch.from_numpy(np.fromfile(a.heldout, dtype="<u2").astype(np.int64)
                         .reshape(-1, 256)[a.row:a.row + 1])
    scores = []
    with torch.no_grad():
        h = m.embed(x)
        for b in m.blocks:
            if isinstance(b.ffn, MoE):
                hn = b.ffn_norm(b.attn(b.attn_norm(h)) + h)
                scores.append((torch.sigmoid(b.ffn.router(hn[0])), b.ffn.bias.clone()))
            h = b(h)
    L, T, K = len(scores), x.shape[1], c.top_k
    ebytes = 3 * c.dim * c.ff_exp * 4
    with open(a.out, "w") as f:
        f.write("# route_trace v1\n")
        f.write(f"# model=glm4moe-stories-f32.gguf:moe-layers-1-{L} arch=glm4moe "
                f"n_layer={L} n_expert={c.n_expert} n_expert_used={K}\n")
        f.write("turn,phase,step,layer,slot,expert,weight,residency,expert_bytes\n")
        for t in range(T):
            for l, (s, bias) in enumerate(scores):
                sel = torch.topk(s[t] + bias, K).indices
                w = s[t][sel].double()
                w = w / w.sum()
                order = torch.argsort(w, descending=True)
                ws = [round(float(w[i]), 6) for i in order]
                ws[-1] = round(1.0 - sum(ws[:-1]), 6)
                for slot, i in enumerate(order.tolist()):
                    f.write(f"0,{0 if t < a.prompt else 1},{t},{l},{slot},{int(sel[i])},"
                            f"{ws[slot]:.6f},0,{ebytes}\n")


if __name__ == "__main__":
    main()
