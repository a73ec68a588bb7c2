/* tok_gemma4.c - the SentencePiece-style BPE of Gemma 4 (tokenizer.ggml.model
 * "gemma4", or a "gpt2" vocabulary with tokenizer.ggml.pre "gemma4"): BPE
 * merges by rank over raw UTF-8, without the GPT-2 byte mapping.
 *
 * One raw fragment is encoded as llama.cpp's gemma4 path does it:
 *   1. the text is read as code points leniently (a lead byte with the right
 *      number of continuation bytes is one code point, even when overlong
 *      or a surrogate; any other byte is U+FFFD) and written back as UTF-8,
 *      with every ASCII space turned into U+2581;
 *   2. it is cut into runs of newlines and runs of anything else (the
 *      pre-split [^\n]+|[\n]+);
 *   3. a run of newlines that is itself a token is that token;
 *   4. otherwise each run is merged from one symbol per character: the
 *      adjacent pair with the lowest merge rank (leftmost on ties) until no
 *      ranked pair remains;
 *   5. a final symbol that is not a token becomes the <0xNN> tokens of its
 *      bytes (bytes without such a token are dropped).
 * Knows the merge table, the vocabulary and the byte tokens, not the
 * special tokens (tokenizer.c cuts those out first). */
#include "tok/tok_internal.h"

#include <string.h>

#define U2581 "\xE2\x96\x81"

/* Writes cp (at most U+10FFFF) as UTF-8 into o; returns the length. */
static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Step 1 into s->text; returns the length or (size_t)-1 (no memory). A
 * 4-byte form above U+10FFFF, which llama.cpp cannot write back (it throws),
 * becomes U+FFFD here. */
static size_t normalize(const char *text, size_t len, sl_tok_scratch *s)
{
    /* every input byte yields at most 3 output bytes */
    if (len > SIZE_MAX / 3 - 1) return (size_t)-1;
    if (!sl_tok_reserve((void **)&s->text, &s->text_cap, 3 * len + 1, 1)) return (size_t)-1;
    const unsigned char *u = (const unsigned char *)text;
    char *o = s->text;
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = sl_tok_utf8_decode(u + i, len - i, &cp);
        if (k == 0 || cp > 0x10FFFF) {
            memcpy(o + w, "\xEF\xBF\xBD", 3);
            w += 3;
            i += k ? k : 1;
        } else if (cp == ' ') {
            memcpy(o + w, U2581, 3);
            w += 3;
            i++;
        } else {
            w += put_utf8(o + w, cp);
            i += k;
        }
    }
    o[w] = '\0';
    return w;
}

/* Steps 3-5 for one run word[0..n) (valid UTF-8). */
static int encode_run(const sl_tokenizer *tok, const char *word, size_t n, sl_tok_scratch *s,
                      sl_tok_ids *out)
{
    if (word[0] == '\n') {
        int32_t id = sl_tok_map_get(&tok->vocab, word, n, 0);
        if (id >= 0) return sl_tok_ids_push(out, id);
    }
    const int32_t ns = sl_tok_char_symbols(s, word, n);
    if (ns < 0) return SL_ENOMEM;
    if (sl_tok_merge(tok, s, word, 0, ns, SL_TOK_MERGE_RANK)) return SL_ENOMEM;

    for (int32_t i = 0; i != -1; i = s->sym[i].next) {
        const sl_tok_symbol *sy = &s->sym[i];
        int32_t id = sl_tok_map_get(&tok->vocab, word + sy->off, sy->n, 0);
        if (id >= 0) {
            if (sl_tok_ids_push(out, id)) return SL_ENOMEM;
            continue;
        }
        for (uint32_t j = 0; j < sy->n; j++) {
            id = tok->byte_tok[(unsigned char)word[sy->off + j]];
            if (id >= 0 && sl_tok_ids_push(out, id)) return SL_ENOMEM;
        }
    }
    return SL_OK;
}

int sl_tok_gemma4_encode(const sl_tokenizer *tok, const char *text, size_t len,
                         sl_tok_scratch *s, sl_tok_ids *out, sl_err *err)
{
    size_t n = normalize(text, len, s);
    if (n == (size_t)-1) goto nomem;
    const char *t = s->text;
    for (size_t i = 0; i < n;) {
        const bool nl = t[i] == '\n';
        size_t j = i + 1;
        while (j < n && (t[j] == '\n') == nl) j++;
        if (encode_run(tok, t + i, j - i, s, out)) goto nomem;
        i = j;
    }
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory encoding a %zu-byte text", len);
}
