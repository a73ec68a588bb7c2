"""Train the glm4moe student on the teacher's corpus: distillation (cross
entropy against the teacher's next-token distribution, computed on the fly),
the MTP head on the token after next (hard labels), a DeepSeek-V3-style
balance loss, and the aux-loss-free bias update on exp_probs_b. Deterministic
given --seed and the corpus (one thread).

With --stream, step s reads rows s*B .. s*B+B-1 of the corpus in file order
(each row is an independent teacher sample, so no row is seen twice), waiting
for gen_corpus.py to write them if it is still running. --init starts from a
checkpoint's weights (a new schedule); --resume continues OUT (weights,
optimiser, step, running averages) after a stop. Every evaluation also
writes each MoE layer's router state to LOG.routers.csv: the entropy of the
expert load over the last --eval-every steps (in bits; 4 is uniform over 16),
the busiest expert's share of the picks, the mean |exp_probs_b| and the mean
top-k share of the (unbiased) sigmoid scores.

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
from init import from_teacher, moefy  # noqa: E402
from teacher import Teacher  # noqa: E402


def load(path, T):
    a = np.fromfile(path, dtype=np.uint16).astype(np.int64)
    return torch.from_numpy(a.reshape(-1, T))


def stream_rows(path, T, first, n):
    """Rows first .. first+n-1 of the corpus, waiting until they exist."""
    row = 2 * T
    while os.path.getsize(path) < (first + n) * row:
        time.sleep(20)
    a = np.fromfile(path, dtype="<u2", count=n * T, offset=first * row)
    return torch.from_numpy(a.astype(np.int64).reshape(n, T))


def router_rows(step, moes, load, share, tent):
    """One CSV row per MoE layer: load entropy (bits), busiest share, mean
    |bias|, mean share of the sigmoid scores' mass in the top-k picks, mean
    per-token entropy of the normalised scores (bits)."""
    rows = []
    for i, m in enumerate(moes):
        p = load[i] / load[i].sum()
        ent = -(p[p > 0] * p[p > 0].log2()).sum().item()
        rows.append(f"{step},{i},{ent:.4f},{p.max().item():.4f},"
                    f"{m.bias.abs().mean().item():.5f},{share[i]:.4f},{tent[i]:.4f}")
    return rows


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
    ap.add_argument("--warm", type=int, default=100, help="warm-up steps")
    ap.add_argument("--stream", action="store_true", help="read the corpus in file order")
    ap.add_argument("--init", help="start from this checkpoint's weights")
    ap.add_argument("--init-mode", choices=("chunks", "moefy"), default="chunks",
                    help="from the teacher: chunks (the first files) or moefy (clustered units)")
    ap.add_argument("--n-shared", type=int, default=4,
                    help="shared expert width in units of ff_exp (32)")
    ap.add_argument("--init-only", action="store_true", help="evaluate the start and stop")
    ap.add_argument("--resume", action="store_true", help="continue OUT")
    ap.add_argument("--out", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    teacher = Teacher(a.model)
    data = None if a.stream else load(a.corpus, a.len)
    held = load(a.heldout, a.len)[:a.eval_seqs]
    c = Config(n_shared=a.n_shared)
    model = Student(c)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.01)
    first, kl_avg, spent = 1, None, 0.0
    if a.resume and os.path.exists(a.out):
        ck = torch.load(a.out)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        torch.set_rng_state(ck["rng"])
        first, kl_avg, spent = ck["step"] + 1, ck["kl_avg"], ck["seconds"]
        print(f"resuming after step {ck['step']}", file=sys.stderr)
    elif a.init:
        model.load_state_dict(torch.load(a.init)["model"])
    else:
        init = from_teacher if a.init_mode == "chunks" else moefy
        init(model, teacher, (stream_rows(a.corpus, a.len, 0, 32) if a.stream
                              else data[:32]), a.seed)
    if first == 1:
        ps, pt, pm = evaluate(model, teacher, held)
        print(f"start: ppl student {ps:.4f} teacher {pt:.4f} mtp {pm:.4f}", file=sys.stderr)
        for i, m in enumerate(model.moe_layers()):
            print(f"start: moe {i} top-k share {m.last_topk_share:.4f} token entropy "
                  f"{m.last_token_entropy:.4f}", file=sys.stderr)
        if a.init_only:
            return
    print(f"student: {sum(p.numel() for p in model.parameters())} parameters", file=sys.stderr)
    g = torch.Generator().manual_seed(a.seed)
    if not a.stream:
        order = torch.randperm(len(data), generator=g)
    warm = a.warm
    log = open(a.log, "a" if first > 1 else "w")
    rlog = open(a.log + ".routers.csv", "a" if first > 1 else "w")
    if first == 1:
        log.write("step,tokens,seconds,train_kl,ppl_student,ppl_teacher,ppl_mtp_t2\n")
        rlog.write("step,moe_layer,load_entropy_bits,busiest_share,mean_abs_bias,topk_score_share,"
                   "token_entropy_bits\n")
    t0 = time.time() - spent
    pos = 0
    moes = model.moe_layers()
    load_sum = torch.zeros(len(moes), c.n_expert)
    share = [m.last_topk_share for m in moes]
    tent = [m.last_token_entropy for m in moes]
    for step in range(first, a.steps + 1):
        lr = a.lr * min(1.0, step / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / a.steps)))
        for gr in opt.param_groups:
            gr["lr"] = lr
        if a.stream:
            x = stream_rows(a.corpus, a.len, (step - 1) * a.batch, a.batch)
        else:
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
            for i, m in enumerate(moes):
                m.bias += a.bias_rate * torch.sign(m.last_load.mean() - m.last_load)
                load_sum[i] += m.last_load
                share[i] = 0.9 * share[i] + 0.1 * m.last_topk_share
                tent[i] = 0.9 * tent[i] + 0.1 * m.last_token_entropy
        kl = kd.item() - ent
        kl_avg = kl if kl_avg is None else 0.95 * kl_avg + 0.05 * kl
        if step % a.eval_every == 0 or step == a.steps:
            ps, pt, pm = evaluate(model, teacher, held)
            el = time.time() - t0
            row = f"{step},{step * a.batch * a.len},{el:.0f},{kl_avg:.4f},{ps:.4f},{pt:.4f},{pm:.4f}"
            log.write(row + "\n")
            log.flush()
            print(row, file=sys.stderr, flush=True)
            for r in router_rows(step, moes, load_sum, share, tent):
                rlog.write(r + "\n")
            rlog.flush()
            load_sum.zero_()
            torch.save({"config": c.__dict__, "model": model.state_dict(), "step": step,
                        "opt": opt.state_dict(), "rng": torch.get_rng_state(),
                        "kl_avg": kl_avg, "seconds": el}, a.out + ".tmp")
            os.replace(a.out + ".tmp", a.out)
            if step == a.stop_after:
                break
        elif step % 25 == 0:
            print(f"step {step} kl {kl_avg:.4f} mtp {mtp.item():.3f} bal {bal.item():.3f} "
                  f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
