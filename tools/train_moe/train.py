"""Train the glm4moe student on the teacher's corpus: distillation (cross
entropy against the teacher's next-token distribution, computed on the fly),
the MTP head on the token after next (hard labels), a DeepSeek-V3-style
balance loss, and the aux-loss-free bias update on exp_probs_b. Deterministic
given --seed and the corpus (one thread).

  nice -n 19 python3 train.py --corpus corpus.u16 --heldout heldout.u16 \
      --steps 3000 --seed 1 --out student.pt --log curve.csv
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Student  # noqa: E402
from init import from_teacher  # noqa: E402
from teacher import Teacher  # noqa: E402


def load(path, T):
    a = np.fromfile(path, dtype=np.uint16).astype(np.int64)
    return torch.from_numpy(a.reshape(-1, T))


@torch.no_grad()
def evaluate(model, teacher, held, bs=64):
    """Held-out perplexities on the teacher's text: the student's, the
    teacher's, and the student MTP head's (token after next)."""
    model.eval()
    s_nll = t_nll = m_nll = 0.0
    n = m = 0
    for i in range(0, len(held), bs):
        x = held[i:i + bs]
        lg, lm = model(x)
        tg = teacher.forward(x)
        s_nll += F.cross_entropy(lg[:, :-1].reshape(-1, lg.shape[-1]), x[:, 1:].reshape(-1),
                                 reduction="sum").item()
        t_nll += F.cross_entropy(tg[:, :-1].reshape(-1, tg.shape[-1]), x[:, 1:].reshape(-1),
                                 reduction="sum").item()
        m_nll += F.cross_entropy(lm[:, :-1].reshape(-1, lm.shape[-1]), x[:, 2:].reshape(-1),
                                 reduction="sum").item()
        n += x[:, 1:].numel()
        m += x[:, 2:].numel()
    model.train()
    return math.exp(s_nll / n), math.exp(t_nll / n), math.exp(m_nll / m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/work/shared/models/stories260K/stories260K.bin")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--heldout", required=True)
    ap.add_argument("--len", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=4e-3)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--balance-weight", type=float, default=0.01)
    ap.add_argument("--bias-rate", type=float, default=1e-3)
    ap.add_argument("--stop-after", type=int, default=0,
                    help="stop after this step (the schedule still spans --steps)")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--eval-seqs", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    teacher = Teacher(a.model)
    data = load(a.corpus, a.len)
    held = load(a.heldout, a.len)[:a.eval_seqs]
    c = Config()
    model = Student(c)
    from_teacher(model, teacher, data[:32], a.seed)
    ps, pt, pm = evaluate(model, teacher, held)
    print(f"from the teacher: ppl student {ps:.4f} teacher {pt:.4f} mtp {pm:.4f}", file=sys.stderr)
    print(f"student: {sum(p.numel() for p in model.parameters())} parameters; "
          f"corpus {data.numel()} tokens", file=sys.stderr)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.01)
    g = torch.Generator().manual_seed(a.seed)
    order = torch.randperm(len(data), generator=g)
    warm = 100
    log = open(a.log, "w")
    log.write("step,tokens,seconds,train_kl,ppl_student,ppl_teacher,ppl_mtp_t2\n")
    t0 = time.time()
    pos = 0
    kl_avg = None
    for step in range(1, a.steps + 1):
        lr = a.lr * min(1.0, step / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / a.steps)))
        for gr in opt.param_groups:
            gr["lr"] = lr
        if pos + a.batch > len(order):
            order = torch.randperm(len(data), generator=g)
            pos = 0
        x = data[order[pos:pos + a.batch]]
        pos += a.batch
        with torch.no_grad():
            tp = F.log_softmax(teacher.forward(x), -1)
        lg, lm = model(x)
        ls = F.log_softmax(lg, -1)
        kd = -(tp.exp() * ls).sum(-1).mean()
        ent = -(tp.exp() * tp).sum(-1).mean().item()
        mtp = F.cross_entropy(lm[:, :-1].reshape(-1, c.vocab), x[:, 2:].reshape(-1))
        moes = model.moe_layers()
        bal = sum(m.last_balance for m in moes) / len(moes)
        loss = kd + a.mtp_weight * mtp + a.balance_weight * bal
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():  # aux-loss-free: raise under-used experts' bias
            for m in moes:
                m.bias += a.bias_rate * torch.sign(m.last_load.mean() - m.last_load)
        kl = kd.item() - ent
        kl_avg = kl if kl_avg is None else 0.95 * kl_avg + 0.05 * kl
        if step % a.eval_every == 0 or step == a.steps:
            ps, pt, pm = evaluate(model, teacher, held)
            el = time.time() - t0
            row = f"{step},{step * a.batch * a.len},{el:.0f},{kl_avg:.4f},{ps:.4f},{pt:.4f},{pm:.4f}"
            log.write(row + "\n")
            log.flush()
            print(row, file=sys.stderr, flush=True)
            torch.save({"config": c.__dict__, "model": model.state_dict(), "step": step}, a.out)
            if step == a.stop_after:
                break
        elif step % 25 == 0:
            print(f"step {step} kl {kl_avg:.4f} mtp {mtp.item():.3f} bal {bal.item():.3f} "
                  f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
