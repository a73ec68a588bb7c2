# make_strings.py - writes strings.json, the test strings of the gemma4 and
# kimi-k2 golden files (written for sluice; deterministic).
import json
import random

base = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\n" * 31, "\n" * 32, "\n" * 45, "\n" * 70,
    "\r\n", "\r\n\r\n", " \n", "\n ", " \n \n", "a\n\nb", "a\n\n\n\nb\n", "\n\n\nx\n\n\n",
    "Hello world", " Hello world", "Hello  world", "Hello   world", "hello World HELLO wORLD",
    "HelloWorld camelCaseWords ACRONYMsAndMore", "    leading spaces", "trailing spaces    ",
    "I'm here, they'll go; it's OK. I'M HERE", "don't won't can't shouldn't've y'all",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE", "o'clock O'Neil rock'n'roll",
    "1", "12", "123", "1234", "12345", "1234567890", "3.14159 2.5e-10 1,000,000", "0x1F 0b1010 0o17",
    "$100 €200 ¥300 £400", "100% 50‰", "2026-12-01T21:55:00Z", "+1 (555) 123-4567",
    "def f(x):\n    return x * 2\n", "int main(void) { return 0; }\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n", "if x == 1:\n\tprint('one')\nelse:\n\tpass",
    "    four\n        eight\n            twelve", "<div class=\"x\"><span>hi</span></div>",
    "<table><tr><td>1</td></tr></table>", "```python\nprint(1)\n```", "a->b && c || !d",
    "x += 1; y -= 2; z *= 3; w /= 4;", "// comment\n/* block */\n# hash", "https://example.com/a/b?c=d&e=f#g",
    "user@example.com", "C:\\Program Files\\x", "~/.config/sluice/config.toml",
    "Ünïcödé façade naïve café", "Ελληνικά κείμενο", "Русский текст здесь", "עברית", "العربية نص",
    "हिन्दी पाठ", "ภาษาไทย", "한국어 텍스트", "日本語のテキスト", "カタカナ ひらがな", "中文文本测试",
    "中文English混合mixed", "我爱北京天安门", "龍龜𠀀𪚥", "Tiếng Việt có dấu", "ǅ ǈ ǋ ǲ",
    "e\u0301 a\u0308 o\u0302", "ﬁ ﬂ ﬃ", "Ａｂｃ１２３", "①②③ ⅠⅡⅢ", "½ ¾ ²³",
    "😀 😃 😄 😁", "👨‍👩‍👧‍👦 family", "🇫🇷🇩🇪🇯🇵", "👍🏽 thumbs", "✔ ✘ ★ ☆ ♥", "→ ← ↑ ↓ ⇒",
    "∑ ∫ √ ∞ ≠ ≤ ≥", "α + β = γ", "\u00a0nbsp\u00a0", "zero\u200bwidth\u200bspace", "\u3000ideographic\u3000space",
    "tab\tseparated\tvalues", "mixed \t \n whitespace", "\u2581already\u2581escaped", "▁▁▁",
    "<|turn>user\nHello<turn|>\n<|turn>model\n", "<|turn>system\n<|think|>\nBe brief.<turn|>\n",
    "<|channel>thought\n<channel|>Answer", "<|tool_call>call:f{a:<|\"|>x<|\"|>}<tool_call|>",
    "<|tool_response>response:f{ok}<tool_response|>", "<bos>text<eos>", "<pad><unk><mask>",
    "<|turn><|turn><turn|><turn|>", "x<|turn>y", " <|turn> ", "<|turn\n", "<turn|", "<|tool>decl<tool|>",
    "<start_of_image><end_of_image>", "</s> <s>", "<unused99> <unused100>",
    "The quick brown fox jumps over the lazy dog.", "THE QUICK BROWN FOX", "the-quick_brown.fox",
    "supercalifragilisticexpialidocious", "antidisestablishmentarianism",
    "a" * 40, "ab" * 30, " " * 40, "-" * 50, "=" * 33, "." * 20, "!?" * 10,
    "\x00\x01\x02", "bell\x07char", "\x7f del", "\ufffd replacement", "\U0010FFFF max",
]

rng = random.Random(20261201)
alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n\t.,;:!?'\"()[]{}<>/\\-_=+*&^%$#@~`|") + \
    list("éüßçñøåæœ中文日本語한국어ελληνικάрусский😀👍🏽✔→∑") + ["▁", "\u00a0", "\u3000", "\r\n", "  ", "\n\n"]
words = ["the", "of", "and", "model", "token", "sluice", " expert", "stream", "中文", "テスト", "ça", "über",
         "123", "4567", "<|turn>", "<turn|>", "<|channel>", "<eos>", "user", "model\n", "    ", "\n\n\n"]
rand = []
for i in range(140):
    if i % 2 == 0:
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
    else:
        s = "".join(rng.choice(words) + rng.choice(["", " ", "  ", "\n", ""]) for _ in range(rng.randint(1, 12)))
    rand.append(s)

# byte strings that are not valid UTF-8 (overlong forms, surrogates, lone
# continuation and lead bytes, truncated sequences), given in hex; not a
# 4-byte form above U+10FFFF: llama.cpp aborts on it ("invalid codepoint")
raw = ["c080", "e080af", "eda080", "80", "bf41", "c3", "e282", "f09f98", "ff fe".replace(" ", ""),
       "41c32042", "e2968120c3", "0a0ac30a", "c3a9cc81"]
rand += [{"hex": h} for h in raw]

json.dump(base + rand, open("strings.json", "w", encoding="utf-8"), ensure_ascii=True, indent=0)
print(len(base) + len(rand), "strings")
