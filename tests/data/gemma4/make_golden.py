# make_golden.py - writes the gemma4 golden files of this directory:
#   gemma4.inp     the strings of strings.json, each followed by
#                  "\n__ggml_vocab_test__\n" (llama.cpp's vocab test layout)
#   gemma4.out     one line of ids per string: llama.cpp's own
#                  llama_tokenize (no BOS, special tokens parsed) on
#                  gemma4-vocab.gguf (make_vocab.py), produced by lltok.c
#   gemma4-subset.vocab   "id<TAB>type<TAB>hex of the text": every token those
#                  ids, every merge on the way and the special-token partition
#                  need (all byte, control, user-defined, unknown tokens)
#   gemma4-subset.merges  "rank<TAB>hex left<TAB>hex right": every merge the
#                  full list applies to these strings, in rank order
# To know which merges apply, this script encodes each string itself (its own
# reading of llama.cpp's gemma4 tokenizer) and refuses to write anything
# unless its ids equal llama.cpp's for every string. Merging with a subset of
# the merge list that holds every merge the full list applies gives the same
# result (each step's lowest-ranked pair is in the subset and nothing ranked
# lower is).
#
#   python3 make_strings.py
#   python3 make_vocab.py .../tokenizer.json /tmp/gemma4-vocab.gguf
#   (write gemma4.inp: python3 make_golden.py inp)
#   lltok /tmp/gemma4-vocab.gguf gemma4.inp /tmp/gemma4.llama.out 0 1
#   python3 make_golden.py /tmp/gemma4-vocab.gguf /tmp/gemma4.llama.out
import heapq
import json
import sys

import gguf_vocab as G

SEP = "\n__ggml_vocab_test__\n"
CONTROL, UNKNOWN, USER_DEFINED = 3, 2, 4


def strings():
    """The test strings as bytes (entries {"hex": ...} are not UTF-8)."""
    out = []
    for s in json.load(open("strings.json", encoding="utf-8")):
        out.append(bytes.fromhex(s["hex"]) if isinstance(s, dict) else s.encode("utf-8"))
    return out


def write_inp():
    with open("gemma4.inp", "wb") as f:
        for s in strings():
            f.write(s + SEP.encode())


def utf8_len(b):
    return [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4][b >> 4]


class Tok:
    def __init__(self, path):
        kv = {k: v for k, _, v in G.read(path)}
        self.texts = kv["tokenizer.ggml.tokens"][1]
        self.types = kv["tokenizer.ggml.token_type"][1]
        self.ids = {}
        for i, t in enumerate(self.texts):
            self.ids.setdefault(t, i)
        self.rank = {}
        for r, m in enumerate(kv["tokenizer.ggml.merges"][1]):
            sp = m.find(b" ", 1)
            if sp > 0:
                self.rank.setdefault((m[:sp], m[sp + 1:]), r)
        sp = [i for i, ty in enumerate(self.types) if ty in (CONTROL, UNKNOWN, USER_DEFINED)]
        self.specials = sorted(sp, key=lambda i: -len(self.texts[i]))  # stable: ties by id
        self.used_merges = set()
        self.used_tokens = set()

    def partition(self, text):
        frags = [(text, None)]
        for sid in self.specials:
            st = self.texts[sid]
            out = []
            for f, i in frags:
                if i is not None:
                    out.append((f, i))
                    continue
                while True:
                    p = f.find(st)
                    if p < 0:
                        break
                    if p:
                        out.append((f[:p], None))
                    out.append((st, sid))
                    f = f[p + len(st):]
                if f:
                    out.append((f, None))
            frags = out
        return frags

    def bpe(self, word, out):
        if word.strip(b"\n") == b"" and word in self.ids:
            out.append(self.ids[word])
            return
        syms, o = [], 0
        while o < len(word):
            n = min(utf8_len(word[o]), len(word) - o)
            syms.append(word[o:o + n])
            o += n
        live = list(range(len(syms)))
        prev = [i - 1 for i in live]
        nxt = [i + 1 if i + 1 < len(syms) else -1 for i in live]
        heap = []

        def add(l, r):
            if l < 0 or r < 0:
                return
            k = self.rank.get((syms[l], syms[r]))
            if k is not None:
                heapq.heappush(heap, (k, l, r, syms[l] + syms[r]))

        for i in range(1, len(syms)):
            add(i - 1, i)
        while heap:
            k, l, r, txt = heapq.heappop(heap)
            if not syms[l] or not syms[r] or syms[l] + syms[r] != txt:
                continue
            self.used_merges.add(k)
            syms[l] = txt
            syms[r] = b""
            nxt[l] = nxt[r]
            if nxt[r] >= 0:
                prev[nxt[r]] = l
            add(prev[l], l)
            add(l, nxt[l])
        for s in syms:
            if not s:
                continue
            if s in self.ids:
                out.append(self.ids[s])
            else:
                for b in s:
                    h = b"<0x%02X>" % b
                    if h in self.ids:
                        out.append(self.ids[h])

    @staticmethod
    def normalize(f):
        """Code points read as llama.cpp reads them (a lead byte and the
        continuation bytes it announces, overlong or not; else U+FFFD),
        written back as UTF-8, spaces as U+2581."""
        out, i = bytearray(), 0
        while i < len(f):
            c = f[i]
            k = 1 if c < 0x80 else 2 if c >> 5 == 6 else 3 if c >> 4 == 14 else 4 if c >> 3 == 30 else 0
            ok = k and i + k <= len(f) and all(f[i + j] >> 6 == 2 for j in range(1, k))
            if not ok:
                out += "\ufffd".encode()
                i += 1
                continue
            cp = c if k == 1 else c & (0x3F >> (k - 1))
            for j in range(1, k):
                cp = cp << 6 | (f[i + j] & 0x3F)
            if cp > 0x10FFFF:
                raise ValueError("llama.cpp cannot encode this")
            out += "\u2581".encode() if cp == 0x20 else chr(cp).encode("utf-8", "surrogatepass")
            i += k
        return bytes(out)

    def encode(self, s):
        out = []
        for f, sid in self.partition(s):
            if sid is not None:
                out.append(sid)
                continue
            f = self.normalize(f)
            i = 0
            while i < len(f):
                j = i
                nl = f[i] == 0x0A
                while j < len(f) and (f[j] == 0x0A) == nl:
                    j += 1
                self.bpe(f[i:j], out)
                i = j
        return out


def main(vocab_path, llama_out):
    tok = Tok(vocab_path)
    want = [[int(x) for x in line.split()] for line in open(llama_out)]
    ss = strings()
    assert len(want) == len(ss)
    bad = 0
    for s, w in zip(ss, want):
        got = tok.encode(s)
        if got != w:
            bad += 1
            print("differs:", repr(s), got, w)
        tok.used_tokens.update(w)
    if bad:
        sys.exit("%d strings differ from llama.cpp: nothing written" % bad)
    keep = set(tok.used_tokens)
    keep.update(i for i, ty in enumerate(tok.types) if ty in (CONTROL, UNKNOWN, USER_DEFINED, 6))
    by_rank = {r: lr for lr, r in tok.rank.items()}
    for r in tok.used_merges:
        l, rr = by_rank[r]
        keep.update(tok.ids[x] for x in (l, rr, l + rr) if x in tok.ids)
    with open("gemma4-subset.vocab", "w") as f:
        for i in sorted(keep):
            f.write("%d\t%d\t%s\n" % (i, tok.types[i], tok.texts[i].hex()))
    with open("gemma4-subset.merges", "w") as f:
        for r in sorted(tok.used_merges):
            l, rr = by_rank[r]
            f.write("%d\t%s\t%s\n" % (r, l.hex(), rr.hex()))
    with open("gemma4.out", "w") as f:
        for w in want:
            f.write("".join(" %d" % x for x in w) + "\n")
    print(len(ss), "strings,", len(keep), "tokens,", len(tok.used_merges), "merges")


if __name__ == "__main__":
    if sys.argv[1:] == ["inp"]:
        write_inp()
    else:
        main(sys.argv[1], sys.argv[2])
