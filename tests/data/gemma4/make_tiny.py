# make_tiny.py - writes gemma4-tiny.gguf, a small hand-made vocabulary-only
# file of tokenizer.ggml.model "gemma4" (written for sluice) whose
# metadata says add_bos_token false and pre "llama-bpe" (llama.cpp forces
# BOS for Gemma 4 and ignores the pre name). gemma4-tiny.out (BOS added,
# specials parsed) and gemma4-tiny.nospecial.out (neither) are llama.cpp's
# ids for gemma4-tiny.inp:
#   lltok gemma4-tiny.gguf gemma4-tiny.inp gemma4-tiny.out 1 1
#   lltok gemma4-tiny.gguf gemma4-tiny.inp gemma4-tiny.nospecial.out 0 0
import gguf_vocab as G

NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6
U = "\u2581"
toks = [("<pad>", CONTROL), ("<eos>", CONTROL), ("<bos>", CONTROL), ("<unk>", 2),
        ("<|turn>", CONTROL), ("<turn|>", CONTROL), ("<|tool_response>", USER_DEFINED),
        ("<|channel>", USER_DEFINED), ("</s>", NORMAL)]
toks += [("<0x%02X>" % b, BYTE) for b in range(256)]
merges = ["h e", "l l", "he ll", "hell o", U + " hello", "o r", "w or", "wor l", "worl d",
          U + " world", "\n \n", U + " " + U, "1 2", "12 3", "é t", U + " é"]
normal = [U, "h", "e", "l", "o", "w", "r", "d", "1", "2", "3", "é", "t", "\n", "\n\n\n",
          "he", "ll", "hell", "hello", U + "hello", "or", "wor", "worl", "world", U + "world",
          U + U, "12", "123", "ét", U + "é"]
# "\n\n" is deliberately no token while "\n \n" is a merge: two newlines merge,
# three are looked up whole
toks += [(t, NORMAL) for t in normal]
kvs = [
    ("general.architecture", G.STR, "gpt2"), ("general.name", G.STR, "gemma4 tiny"),
    ("gpt2.block_count", G.U32, 1), ("gpt2.context_length", G.U32, 64),
    ("gpt2.embedding_length", G.U32, 8), ("gpt2.feed_forward_length", G.U32, 8),
    ("gpt2.attention.head_count", G.U32, 1), ("gpt2.attention.layer_norm_epsilon", G.F32, 1e-5),
    ("tokenizer.ggml.model", G.STR, "gemma4"), ("tokenizer.ggml.pre", G.STR, "llama-bpe"),
    ("tokenizer.ggml.tokens", G.ARR, (G.STR, [t for t, _ in toks])),
    ("tokenizer.ggml.token_type", G.ARR, (G.I32, [ty for _, ty in toks])),
    ("tokenizer.ggml.merges", G.ARR, (G.STR, merges)),
    ("tokenizer.ggml.bos_token_id", G.U32, 2), ("tokenizer.ggml.eos_token_id", G.U32, 1),
    ("tokenizer.ggml.add_bos_token", G.BOOL, False),
]
G.write("gemma4-tiny.gguf", kvs)
cases = ["hello world", " hello  world", "hello\n\nworld\n\n\n", "<|turn>hello<turn|>",
         "x<|tool_response>y</s>", "123123 12 1", "été", "\n\n\n\n\n", "wörld", ""]
with open("gemma4-tiny.inp", "w", encoding="utf-8", newline="") as f:
    for c in cases:
        f.write(c + "\n__ggml_vocab_test__\n")
