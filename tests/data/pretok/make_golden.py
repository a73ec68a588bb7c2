# make_golden.py - writes the pre-tokenizer golden files of this directory
# from llama.cpp itself (the libraries of node-llama-cpp, through the two
# small programs of ../gemma4: lltok.c and llsplit.cpp):
#   pretok.inp      test strings (those of ../gemma4/strings.json and the
#                   Han-heavy ones below), each followed by
#                   "\n__ggml_vocab_test__\n"
#   kimi-k2.split   one line per string: llama.cpp's pieces for
#                   tokenizer.ggml.pre "kimi-k2" (unicode_regex_split with the
#                   pattern list llama-vocab.cpp gives that name, which
#                   selects its hand-written Kimi K2 splitter), each piece in
#                   hex, space-separated
#   gpt2-as-NAME.out  llama.cpp's ids (no BOS, specials parsed) for these
#                   strings with the GPT-2 vocabulary and merges of
#                   ../tokenizers/ggml-vocab-gpt-2.gguf relabelled
#                   tokenizer.ggml.pre NAME: byte-level merges run inside the
#                   pieces, so the ids show where each pre-tokenizer cuts
#
#   python3 make_golden.py inp
#   llsplit pretok.inp kimi-k2.split '\p{Han}+'
#   python3 make_golden.py ids /path/to/lltok   (also writes aliases.txt)
import json
import os
import subprocess
import sys

sys.path.insert(0, "../gemma4")
import gguf_vocab as G  # noqa: E402

SEP = b"\n__ggml_vocab_test__\n"

# one name per pattern set sluice knows, and the names of the 2026 families
NAMES = ["default", "gpt-2", "llama-bpe", "qwen2", "qwen35", "deepseek-llm", "deepseek-coder",
         "starcoder", "falcon", "gpt-4o", "deepseek-v3", "glm4", "kimi-k2"]
# more names of these sets: their ids are checked to equal those of a file
# above and recorded in aliases.txt ("alias name-of-that-file")
ALIASES = ["joyai-llm", "hunyuan-dense", "hy_v4", "midm-2.0", "lfm2", "jina-v5-nano", "kormo",
           "f2llmv2", "solar-open", "kanana2", "talkie", "minimax-m2", "mellum2"]

HAN = [
    "中文", "中文English", "English中文", "我爱北京天安门。", "汉字漢字", "日本語のテキスト",
    "カタカナとひらがな", "中国人民共和国成立了", "龍龜𠀀𪚥𫝀𬺰", "豈更車", "丽丸乁",
    "㐀㐁㐂 ext A", "一二三 123 四五六", "中。文，标点！", "“引号”‘单’", "中 文 空 格",
    "中\n文\n\n", "中1文22字333", "韩국어한국", "中a文b", "a中b", "'s中", "中's", "I'm中国人",
    "don't中文", "中文don't", "ÀÉÎ中õü", "e\u0301中", "中\u0301", " 中", "  中文", "\t中\t",
    "中文    ", "中文\r\n", "Ｈａｎ中ｗｉｄｅ", "①中②", "αβγ中δ", "ⅰⅱ中", "〇々〆", "中\u3000文",
    "\u0378\u0379 unassigned", "\ue000 private", "\U000e0001 tag", "a\u00adb soft hyphen",
    "HelloWorld camelCase ALLCAPS", "o'clock O'NEIL 'RE 'Ll", "x'", "'", "''s", "a's'", "1'2",
]


def strings():
    out = []
    for s in json.load(open("../gemma4/strings.json", encoding="utf-8")):
        out.append(bytes.fromhex(s["hex"]) if isinstance(s, dict) else s.encode("utf-8"))
    out += [s.encode("utf-8") for s in HAN]
    return out


def main():
    if sys.argv[1] == "inp":
        with open("pretok.inp", "wb") as f:
            for s in strings():
                f.write(s + SEP)
    elif sys.argv[1] == "ids":
        kvs = G.read("../tokenizers/ggml-vocab-gpt-2.gguf")
        for name in NAMES:
            tmp = "/tmp/gpt2-as-%s.gguf" % name
            G.write(tmp, [(k, t, name.encode() if k == "tokenizer.ggml.pre" else v)
                          for k, t, v in kvs])
            subprocess.run([sys.argv[2], tmp, "pretok.inp", "gpt2-as-%s.out" % name, "0", "1"],
                           check=True)
            os.remove(tmp)
        outs = {n: open("gpt2-as-%s.out" % n).read() for n in NAMES}
        with open("aliases.txt", "w") as f:
            for name in ALIASES:
                tmp = "/tmp/gpt2-as-%s.gguf" % name
                G.write(tmp, [(k, t, name.encode() if k == "tokenizer.ggml.pre" else v)
                              for k, t, v in kvs])
                subprocess.run([sys.argv[2], tmp, "pretok.inp", tmp + ".out", "0", "1"],
                               check=True)
                got = open(tmp + ".out").read()
                same = [n for n in NAMES if outs[n] == got]
                assert same, "%s: ids equal no file here" % name
                f.write("%s %s\n" % (name, same[0]))
                os.remove(tmp)
                os.remove(tmp + ".out")


if __name__ == "__main__":
    main()
