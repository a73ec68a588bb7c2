/* tok_pretok.c - the BPE pre-tokenizers: which split patterns each
 * tokenizer.ggml.pre name means, and splitting text with them (PCRE2, UTF
 * mode, Unicode properties).
 *
 * The patterns are those the models' tokenizer.json files publish, as
 * llama.cpp applies them, rewritten here with two deliberate changes that
 * keep llama.cpp's observable behaviour:
 *   - \s and \S are spelled as an explicit class of the Unicode White_Space
 *     characters (llama.cpp's definition; PCRE2's \s differs on U+0085 and
 *     U+180E);
 *   - in the patterns without \p{..} (DeepSeek's literal ranges), llama.cpp
 *     first turns every non-ASCII whitespace character into U+000B, so such
 *     characters never match a literal range; the ranges below leave them
 *     out (e.g. U+0800-U+4E00 is written without U+1680, U+2000-U+200A,
 *     U+2028, U+2029, U+202F, U+205F and U+3000).
 * Some pre-tokenizers apply several patterns in sequence: each cuts every
 * current piece into its matches and the gaps between them.
 *
 * Knows nothing about vocabularies or merges. */
#include "tok/tok_internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

/* ---- patterns ---------------------------------------------------------- */

#define WS                                                                     \
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}"          \
    "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define SP "[" WS "]"
#define NSP "[^" WS "]"

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
 * (the trailing |\s+ of the original is covered by the gaps between matches). */
#define RE_GPT2                                                                \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|" SP  \
    "+(?!" NSP ")"

/* Llama 3 (tiktoken cl100k style); (?i:...) spelled out for ASCII as
 * llama.cpp does, so no Unicode case folding sneaks in. */
#define RE_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_LLAMA3_LIKE(NUM)                                                    \
    RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" NUM " ?[^" WS            \
    "\\p{L}\\p{N}]+[\\r\\n]*|" SP "*[\\r\\n]+|" SP "+(?!" NSP ")|" SP "+"
#define RE_LLAMA3 RE_LLAMA3_LIKE("\\p{N}{1,3}|")
#define RE_QWEN2 RE_LLAMA3_LIKE("\\p{N}|")
/* Qwen 3.5 / 3.6: qwen2's single digits, with combining marks (\p{M})
 * kept in words and out of the punctuation runs, as llama.cpp's
 * LLAMA_VOCAB_PRE_TYPE_QWEN35 splits. */
#define RE_QWEN35                                                              \
    RE_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^" WS     \
    "\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|" SP "*[\\r\\n]+|" SP "+(?!" NSP ")|" SP "+"

/* o200k (tokenizer.ggml.pre "gpt-4o": gpt-oss, GPT-4o, Llama 4): words are
 * an optional non-letter, upper-case-like letters, then lower-case-like
 * ones (or the reverse emphasis), with marks (\p{M}) inside words and an
 * optional contraction; the file's (?i:'s|...) is spelled out for ASCII, as
 * llama.cpp and the JS tokenizer of the official files read it (so "'ſ" or
 * "'K" with the Kelvin sign is no contraction: PCRE2's caseless matching
 * would fold them); numbers in runs of at most three digits; punctuation
 * runs keep the newlines and slashes after them. */
#define O200K_UP "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define O200K_LO "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define O200K_CONTR RE_CONTRACTIONS "?"
#define RE_O200K                                                               \
    "[^\\r\\n\\p{L}\\p{N}]?" O200K_UP "*" O200K_LO "+" O200K_CONTR             \
    "|[^\\r\\n\\p{L}\\p{N}]?" O200K_UP "+" O200K_LO "*" O200K_CONTR            \
    "|\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n/]*|" SP "*[\\r\\n]+|" SP      \
    "+(?!" NSP ")|" SP "+"

/* DeepSeek LLM: its letters are the cased letters (Lu/Ll/Lt) listed as
 * literal ranges in its tokenizer.json. */
#define DS_CASED                                                               \
    "\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}" \
    "\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}" \
    "\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}" \
    "\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}" \
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}" \
    "\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}" \
    "\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}" \
    "\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}" \
    "\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}" \
    "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}" \
    "\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}" \
    "\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}" \
    "\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}" \
    "\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}" \
    "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}" \
    "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}" \
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}" \
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}"

/* U+4E00-U+9FA5, U+0800-U+4E00 and U+AC00-U+D7FF, whitespace removed. */
#define DS_CJK                                                                 \
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}" \
    "\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{4E00}" \
    "\\x{AC00}-\\x{D7FF}]+"

/* ASCII punctuation, fullwidth forms, quotation marks U+2018-U+201F and
 * U+3000-U+3002 without the ideographic space. */
#define DS_PUNCT                                                               \
    "[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}"           \
    "\\x{3001}-\\x{3002}]+"

/* DeepSeek-V3 / R1 (tokenizer.json, as llama.cpp's DEEPSEEK3_LLM applies
 * it), third of its three patterns: an ASCII punctuation mark leading ASCII
 * letters, words with their marks, punctuation and symbol runs, newlines
 * and spaces. */
#define RE_DEEPSEEK3                                                           \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?" \
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|" SP "*[\\r\\n]+|" SP "+(?!" NSP ")|" SP "+"

/* Kimi K2 (tokenizer.ggml.pre "kimi-k2"). Its tokenizer publishes an o200k
 * shaped pattern with Han characters taken out of the word classes; what
 * llama.cpp runs (and so what the GGUF files are used with) is its own
 * hand-written splitter, which this pattern reproduces: runs of Han
 * characters (llama.cpp's fixed ranges, not the Unicode Script property);
 * words of non-Han letters (\p{L} only: no upper/lower-case structure, no
 * marks) after an optional non-letter, non-digit, non-newline character,
 * with an ASCII contraction; digits in threes; punctuation runs with the
 * newlines after them; newline and space runs as in Llama 3. */
#define KIMI_HAN_RANGES                                                        \
    "\\x{4E00}-\\x{9FFF}\\x{3400}-\\x{4DBF}\\x{20000}-\\x{2A6DF}\\x{2A700}-\\x{2B73F}"    \
    "\\x{2B740}-\\x{2B81F}\\x{2B820}-\\x{2CEAF}\\x{2CEB0}-\\x{2EBEF}\\x{F900}-\\x{FAFF}"   \
    "\\x{2F800}-\\x{2FA1F}"
#define KIMI_NONHAN_LETTER "[^\\P{L}" KIMI_HAN_RANGES "]"
#define RE_KIMI_K2                                                             \
    "[" KIMI_HAN_RANGES "]+|[^\\r\\n\\p{L}\\p{N}]?" KIMI_NONHAN_LETTER                  \
    "+(?:'[sStTmMdD]|'[rR][eE]|'[vV][eE]|'[lL][lL])?|\\p{N}{1,3}| ?[^" WS           \
    "\\p{L}\\p{N}]+[\\r\\n]*|" SP "*[\\r\\n]+|" SP "+(?!" NSP ")|" SP "+"

enum {
    SET_DEFAULT,
    SET_GPT2,
    SET_LLAMA3,
    SET_QWEN2,
    SET_QWEN35,
    SET_DEEPSEEK_LLM,
    SET_DEEPSEEK_CODER,
    SET_STARCODER,
    SET_FALCON,
    SET_O200K,
    SET_DEEPSEEK3, /* DeepSeek-V3 / R1 */
    SET_GEMMA4,    /* Gemma 4 */
    SET_KIMI_K2,   /* Kimi K2 */
    SET_COUNT
};

typedef struct pattern_set {
    const char *name;
    const char *re[SL_TOK_MAX_REGEX]; /* NULL-terminated */
} pattern_set;

static const pattern_set g_sets[SET_COUNT] = {
    [SET_DEFAULT] = {"default",
                     {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL}},
    [SET_GPT2] = {"gpt-2", {RE_GPT2, NULL}},
    [SET_LLAMA3] = {"llama3", {RE_LLAMA3, NULL}},
    [SET_QWEN2] = {"qwen2", {RE_QWEN2, NULL}},
    [SET_QWEN35] = {"qwen35", {RE_QWEN35, NULL}},
    [SET_DEEPSEEK_LLM] = {"deepseek-llm",
                          {"[\\r\\n]", SP "?[" DS_CASED "]+", SP "?" DS_PUNCT, SP "+\\z",
                           DS_CJK, "\\p{N}+", NULL}},
    [SET_DEEPSEEK_CODER] = {"deepseek-coder",
                            {"[\\r\\n]", SP "?\\p{L}+", SP "?\\p{P}+", DS_CJK, "\\p{N}", NULL}},
    [SET_STARCODER] = {"starcoder", {"\\p{N}", RE_GPT2, NULL}},
    [SET_FALCON] = {"falcon",
                    {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]", NULL}},
    [SET_O200K] = {"gpt-4o", {RE_O200K, NULL}},
    /* digits in threes, then kana and the CJK range U+4E00-U+9FA5
     * (no whitespace inside these ranges), then the main pattern */
    [SET_DEEPSEEK3] = {"deepseek-v3",
                       {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
                        RE_DEEPSEEK3, NULL}},
    /* Gemma 4 cuts only newline runs from the rest (tok_gemma4.c
     * does this split itself; the pattern documents it and serves tests) */
    [SET_GEMMA4] = {"gemma4", {"[^\\n]+|[\\n]+", NULL}},
    [SET_KIMI_K2] = {"kimi-k2", {RE_KIMI_K2, NULL}},
};

/* tokenizer.ggml.pre names -> pattern set, as llama.cpp groups them. The
 * llama3 family also skips merging for whole-token pieces and adds BOS. */
typedef struct pre_name {
    const char *name;
    int set;
    bool ignore_merges;
    bool add_bos;
} pre_name;

static const pre_name g_names[] = {
    {"default", SET_DEFAULT, false, false},
    {"gpt-2", SET_GPT2, false, false},
    {"phi-2", SET_GPT2, false, false},
    {"mpt", SET_GPT2, false, false},
    {"gpt-neox", SET_GPT2, false, false},
    {"olmo", SET_GPT2, false, false},
    {"jais", SET_GPT2, false, false},
    {"trillion", SET_GPT2, false, false},
    {"exaone4", SET_GPT2, false, false},
    {"llama3", SET_LLAMA3, true, true},
    {"llama-v3", SET_LLAMA3, true, true},
    {"llama-bpe", SET_LLAMA3, true, true},
    {"falcon3", SET_LLAMA3, true, true},
    {"falcon-h1", SET_LLAMA3, true, true},
    {"pixtral", SET_LLAMA3, true, true},
    {"dbrx", SET_LLAMA3, false, false},
    {"smaug-bpe", SET_LLAMA3, false, false},
    {"qwen2", SET_QWEN2, false, false},
    {"qwen35", SET_QWEN35, false, false},
    {"deepseek-r1-qwen", SET_QWEN2, false, false},
    {"megrez", SET_QWEN2, false, false},
    {"stablelm2", SET_QWEN2, false, false},
    {"hunyuan", SET_QWEN2, false, false},
    {"deepseek-llm", SET_DEEPSEEK_LLM, false, false},
    {"deepseek-coder", SET_DEEPSEEK_CODER, false, false},
    {"starcoder", SET_STARCODER, false, false},
    {"refact", SET_STARCODER, false, false},
    {"command-r", SET_STARCODER, false, false},
    {"smollm", SET_STARCODER, false, false},
    {"codeshell", SET_STARCODER, false, false},
    {"exaone", SET_STARCODER, false, false},
    {"minerva-7b", SET_STARCODER, false, false},
    {"falcon", SET_FALCON, false, false},
    /* the official tokenizer.json sets ignore_merges (tiktoken looks a
     * whole piece up first) */
    {"gpt-4o", SET_O200K, true, false},
    {"llama4", SET_O200K, true, false},
    /* DeepSeek-V3 / R1; GLM-4.x's split is Llama 3's pattern */
    {"deepseek-v3", SET_DEEPSEEK3, false, false},
    {"glm4", SET_LLAMA3, false, false},
    {"chatglm-bpe", SET_LLAMA3, false, false},
    /* Gemma 4's BPE (also IBM's granite multilingual embedder) */
    {"gemma4", SET_GEMMA4, false, false},
    {"granite-embed-multi-311m", SET_GEMMA4, false, false},
    /* Kimi K2 / K2.5 */
    {"kimi-k2", SET_KIMI_K2, false, false},
    /* more names llama.cpp gives these pattern sets (with its flags):
     * DeepSeek-V3's split for the JoyAI and Hunyuan files of the deepseek2
     * family, and the aliases of the Llama 3, Qwen2, o200k and StarCoder
     * sets */
    {"joyai-llm", SET_DEEPSEEK3, false, false},
    {"hunyuan-dense", SET_DEEPSEEK3, false, false},
    {"hy_v4", SET_DEEPSEEK3, false, false},
    {"midm-2.0", SET_LLAMA3, true, true},
    {"lfm2", SET_LLAMA3, true, true},
    {"jina-v5-nano", SET_LLAMA3, true, true},
    {"kormo", SET_QWEN2, false, false},
    {"f2llmv2", SET_QWEN2, false, false},
    {"solar-open", SET_QWEN2, false, false},
    {"kanana2", SET_O200K, false, false},
    {"talkie", SET_O200K, false, false},
    {"minimax-m2", SET_O200K, false, false},
    {"mellum2", SET_STARCODER, false, false},
};

const char *sl_tok_pre_lookup(const char *name, int *set_id, bool *ignore_merges, bool *add_bos)
{
    for (size_t i = 0; i < sizeof g_names / sizeof g_names[0]; i++) {
        if (strcmp(g_names[i].name, name) != 0) continue;
        *set_id = g_names[i].set;
        *ignore_merges = g_names[i].ignore_merges;
        *add_bos = g_names[i].add_bos;
        return g_sets[g_names[i].set].name;
    }
    return NULL;
}

int sl_tok_pre_default_set(void) { return SET_DEFAULT; }

bool sl_tok_pre_is_raw(int set_id) { return set_id == SET_GEMMA4; }

/* ---- compiling and splitting ----------------------------------------------- */

int sl_tok_pretok_init(sl_tok_pretok *p, int set_id, sl_err *err)
{
    memset(p, 0, sizeof *p);
    SL_ASSERT(set_id >= 0 && set_id < SET_COUNT);
    const pattern_set *set = &g_sets[set_id];
    p->max_groups = 1;
    for (int i = 0; i < SL_TOK_MAX_REGEX && set->re[i]; i++) {
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)set->re[i], PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
        if (!re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(ec, msg, sizeof msg);
            sl_tok_pretok_free(p);
            return sl_err_set(err, SL_EINVAL,
                              "pre-tokenizer '%s' pattern %d does not compile at offset %zu: %s",
                              set->name, i, (size_t)eo, (const char *)msg);
        }
        /* JIT is an optimisation only: without it matching still works. */
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
        uint32_t groups = 0;
        pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &groups);
        if (groups + 1 > p->max_groups) p->max_groups = groups + 1;
        p->re[p->n++] = re;
    }
    return SL_OK;
}

void sl_tok_pretok_free(sl_tok_pretok *p)
{
    for (int i = 0; i < p->n; i++) pcre2_code_free((pcre2_code *)p->re[i]);
    memset(p, 0, sizeof *p);
}

/* One match of re in subject[0..len) at or after start; false if none. */
static int find(const pcre2_code *re, const char *subject, size_t len, size_t start,
                pcre2_match_data *md, size_t *ms, size_t *me, sl_err *err)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)subject, len, start, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(re, (PCRE2_SPTR)subject, len, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                         md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return sl_err_set(err, SL_EINVAL, "pre-tokenizer match failed on a %zu-byte piece: %s",
                          len, (const char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *ms = ov[0];
    *me = ov[1];
    return 1;
}

int sl_tok_pretok_split(const sl_tok_pretok *p, const char *text, size_t len, sl_tok_spans *out,
                        sl_err *err)
{
    int rc = SL_OK;
    sl_tok_spans tmp = {0};
    pcre2_match_data *md = NULL;
    out->n = 0;
    if (len == 0) return SL_OK;
    if (sl_tok_spans_push(out, 0, len)) goto nomem;
    md = pcre2_match_data_create(p->max_groups, NULL);
    if (!md) goto nomem;

    for (int r = 0; r < p->n; r++) {
        const pcre2_code *re = p->re[r];
        tmp.n = 0;
        for (size_t k = 0; k < out->n; k++) {
            const size_t base = out->v[k].off, n = out->v[k].len;
            const char *sub = text + base;
            size_t pos = 0, last = 0, ms = 0, me = 0;
            while (pos < n) {
                int f = find(re, sub, n, pos, md, &ms, &me, err);
                if (f < 0) { rc = f; goto out; }
                if (f == 0) break;
                if (me == ms) {
                    /* An empty match cuts nothing; step over one character. */
                    pos = ms + sl_tok_utf8_len((unsigned char)sub[ms]);
                    continue;
                }
                if (ms > last && sl_tok_spans_push(&tmp, base + last, ms - last)) goto nomem;
                if (sl_tok_spans_push(&tmp, base + ms, me - ms)) goto nomem;
                last = pos = me;
            }
            if (last < n && sl_tok_spans_push(&tmp, base + last, n - last)) goto nomem;
        }
        sl_tok_spans swap = *out;
        *out = tmp;
        tmp = swap;
    }
    goto out;
nomem:
    rc = sl_err_set(err, SL_ENOMEM, "out of memory splitting a %zu-byte text", len);
out:
    pcre2_match_data_free(md);
    sl_tok_spans_free(&tmp);
    return rc;
}
