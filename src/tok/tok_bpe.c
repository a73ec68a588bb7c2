/* tok_bpe.c - byte-level BPE encoding of one raw fragment.
 *
 * The fragment is made valid UTF-8 (ill-formed bytes become U+FFFD, as in
 * llama.cpp), split by the pre-tokenizer, and each piece is written through
 * the GPT-2 byte table so that every byte is one visible character. Merging
 * then starts from one symbol per byte and repeatedly applies the adjacent
 * pair with the lowest merge rank (leftmost first on ties) until no ranked
 * pair remains. A priority queue holds candidate pairs; entries made stale
 * by an earlier merge are recognised by their recorded byte size (symbols
 * only ever grow to the right, so an unchanged size means unchanged text).
 * Knows the merge table and the vocabulary, not the special tokens.
 *
 * Long runs: PCRE2 gives up on some pieces of valid text (its match limit):
 * a run of ~10 million whitespace characters under the llama3 and qwen2
 * patterns, whose "\s*[\r\n]+" alternative takes the whole run and then
 * backtracks over it one character at a time. Such runs are shortened
 * before the regex and stretched back after it; see split_long_runs. */
#include "tok/tok_internal.h"

#include <stdlib.h>
#include <string.h>

static int encode_piece(const sl_tokenizer *tok, const unsigned char *p, size_t n,
                        sl_tok_scratch *s, sl_tok_ids *out)
{
    if (n == 0) return SL_OK;
    if (n > UINT32_MAX / 2) return SL_ENOMEM;
    if (!sl_tok_reserve((void **)&s->word, &s->word_cap, 2 * n, 1)) return SL_ENOMEM;
    if (!sl_tok_reserve((void **)&s->sym, &s->sym_cap, n, sizeof *s->sym)) return SL_ENOMEM;

    const sl_tok_bytemap_entry *b2u = sl_tok_byte_to_unicode();
    uint32_t w = 0;
    for (size_t i = 0; i < n; i++) {
        const sl_tok_bytemap_entry *e = &b2u[p[i]];
        s->sym[i].off = w;
        s->sym[i].n = e->len;
        s->sym[i].prev = (int32_t)i - 1;
        s->sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        memcpy(s->word + w, e->s, e->len);
        w += e->len;
    }

    if (tok->ignore_merges) {
        int32_t id = sl_tok_map_get(&tok->vocab, s->word, w, 0);
        if (id >= 0) return sl_tok_ids_push(out, id);
    }

    if (sl_tok_merge(tok, s, s->word, 0, (int32_t)n, SL_TOK_MERGE_RANK)) return SL_ENOMEM;

    for (int32_t i = 0; i != -1; i = s->sym[i].next) {
        const sl_tok_symbol *sy = &s->sym[i];
        int32_t id = sl_tok_map_get(&tok->vocab, s->word + sy->off, sy->n, 0);
        if (id >= 0) {
            if (sl_tok_ids_push(out, id)) return SL_ENOMEM;
            continue;
        }
        /* A merge result missing from the vocabulary: fall back to its
         * single-byte pieces that are tokens (llama.cpp's rule). */
        for (uint32_t j = 0; j < sy->n; j++) {
            id = sl_tok_map_get(&tok->vocab, s->word + sy->off + j, 1, 0);
            if (id >= 0 && sl_tok_ids_push(out, id)) return SL_ENOMEM;
        }
    }
    return SL_OK;
}

/* ---- long runs ----------------------------------------------------------
 *
 * A run is a stretch of at least RUN_MIN characters that are either all the
 * same code point, or all whitespace other than \r and \n (the White_Space
 * set the patterns spell out in tok_pretok.c). Every pattern set treats the
 * characters of such a run alike away from its ends: across all the
 * patterns, a whitespace character other than \r\n belongs to exactly the
 * same classes as any other (the whitespace class, its complement's
 * complement, [^\r\n\p{L}\p{N}], never \p{L}, \p{N}, \p{P} or a
 * DeepSeek range), and the only literal whitespace, the optional space in
 * " ?X", needs the next character to be X, i.e. the end of the run. The
 * quantifiers are unbounded (+, *) or count at most three characters
 * ({1,3}, "[0-9][0-9][0-9]", contractions), and the lookarounds look one
 * character ahead ((?!\S)) or at the end (\z). So the matcher's decisions
 * inside a long run depend only on where its ends are (a greedy repeat runs
 * to the end and backs off from there; an optional prefix or a lookahead
 * sees one character past it): removing characters from the middle of a run
 * moves the pieces' boundaries near its end by the same amount and changes
 * nothing else, provided no boundary falls in the middle. That is checked:
 * the regex runs on the shortened text, and a boundary more than RUN_QUIET
 * characters from both ends of a shortened run (runs of digits cut in
 * threes, newlines cut one by one, ...) makes the whole text go to the regex
 * as it is. The shortened run keeps RUN_EDGE characters at each end and
 * between them 6 + (removed-count residue mod 6) of the middle ones, so even
 * a pattern counting in twos or threes would see a run of the same length
 * modulo 6.
 *
 * Measured: 10 MB of spaces under qwen2 failed at the match limit; now the
 * regex sees 140 characters of it. test_tok_runs.c compares the spans with
 * the regex on the whole text, for every pattern set, on runs of every
 * class below the match limit. */

#define RUN_MIN 1024  /* characters; shorter runs go to the regex as they are */
#define RUN_EDGE 64   /* characters kept at each end of a shortened run */
#define RUN_QUIET 8   /* a boundary may fall this close to a run's ends */

/* Whitespace other than \r and \n: the WS class of tok_pretok.c. */
static bool is_blank(uint32_t c)
{
    return c == '\t' || c == 0x0B || c == '\f' || c == ' ' || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* One shortened run: [orig, orig + orig_len) of the text became
 * [comp, comp + head + mid + tail) of the shortened text. */
typedef struct run_cut {
    size_t orig, orig_len, comp;
    size_t head, mid, tail;          /* bytes kept: first RUN_EDGE chars, middle, last */
    size_t quiet_head, quiet_tail;   /* bytes of the first/last RUN_QUIET chars */
} run_cut;

typedef struct run_cuts {
    run_cut *v;
    size_t n, cap;
} run_cuts;

/* Bytes of the first k characters of s[0..n). */
static size_t fwd_bytes(const unsigned char *s, size_t n, size_t k)
{
    size_t b = 0;
    for (; k > 0 && b < n; k--) b += sl_tok_utf8_len(s[b]);
    return b < n ? b : n;
}

/* Bytes of the last k characters of s[0..n) (valid UTF-8). */
static size_t back_bytes(const unsigned char *s, size_t n, size_t k)
{
    size_t b = n;
    for (; k > 0 && b > 0; k--) {
        b--;
        while (b > 0 && (s[b] & 0xC0) == 0x80) b--;
    }
    return n - b;
}

/* Finds the runs of text[0..len) (valid UTF-8). */
static int find_runs(const char *text, size_t len, run_cuts *cuts)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        uint32_t c0, c;
        size_t k = sl_tok_utf8_decode(s + i, len - i, &c0);
        if (k == 0) k = 1, c0 = 0xFFFFFFFFu;
        const bool blank = is_blank(c0);
        size_t j = i + k, n_chars = 1;
        while (j < len) {
            size_t kj = sl_tok_utf8_decode(s + j, len - j, &c);
            if (kj == 0 || (blank ? !is_blank(c) : c != c0)) break;
            j += kj;
            n_chars++;
        }
        if (n_chars >= RUN_MIN) {
            if (!sl_tok_reserve((void **)&cuts->v, &cuts->cap, cuts->n + 1, sizeof *cuts->v))
                return SL_ENOMEM;
            run_cut *r = &cuts->v[cuts->n++];
            const size_t mid_chars = 6 + (n_chars - 2 * RUN_EDGE) % 6;
            r->orig = i;
            r->orig_len = j - i;
            r->head = fwd_bytes(s + i, j - i, RUN_EDGE);
            r->mid = fwd_bytes(s + i + r->head, j - i - r->head, mid_chars);
            r->tail = back_bytes(s + i, j - i, RUN_EDGE);
            r->quiet_head = fwd_bytes(s + i, j - i, RUN_QUIET);
            r->quiet_tail = back_bytes(s + i, j - i, RUN_QUIET);
        }
        i = j;
    }
    return SL_OK;
}

/* Walks the cuts while boundaries of the shortened text are mapped back in
 * increasing order. */
typedef struct run_walk {
    size_t at;       /* first cut not yet behind the last boundary */
    size_t removed;  /* bytes removed by the cuts before it */
} run_walk;

static size_t cut_len(const run_cut *r) { return r->head + r->mid + r->tail; }

/* Maps boundary x of the shortened text back to the original; false if it
 * falls inside the middle of a shortened run. */
static bool map_boundary(const run_cuts *cuts, run_walk *wk, size_t x, size_t *orig)
{
    while (wk->at < cuts->n) {
        const run_cut *r = &cuts->v[wk->at];
        const size_t n = cut_len(r);
        if (x <= r->comp) break;
        if (x < r->comp + n) {
            const size_t off = x - r->comp;
            if (off <= r->quiet_head) {
                *orig = r->orig + off;
                return true;
            }
            if (n - off <= r->quiet_tail) {
                *orig = r->orig + r->orig_len - (n - off);
                return true;
            }
            return false;
        }
        wk->removed += r->orig_len - n;
        wk->at++;
    }
    *orig = x + wk->removed;
    return true;
}

/* Splits with long runs shortened (see above). Returns 1 if it applied
 * (spans in *out, in the coordinates of text), 0 if the text goes to the
 * regex as it is, or a negative SL_E* code. */
static int split_shortened(const sl_tok_pretok *p, const char *text, size_t len,
                           sl_tok_spans *out, sl_err *err)
{
    run_cuts cuts = {0};
    char *comp = NULL;
    sl_tok_spans cs = {0};
    int rc = find_runs(text, len, &cuts);
    if (rc || cuts.n == 0) goto done;
    size_t clen = len;
    for (size_t k = 0; k < cuts.n; k++) clen -= cuts.v[k].orig_len - cut_len(&cuts.v[k]);
    if (!(comp = malloc(clen + 1))) {
        rc = SL_ENOMEM;
        goto done;
    }
    size_t w = 0, from = 0;
    for (size_t k = 0; k < cuts.n; k++) {
        run_cut *r = &cuts.v[k];
        memcpy(comp + w, text + from, r->orig - from);
        w += r->orig - from;
        r->comp = w;
        memcpy(comp + w, text + r->orig, r->head + r->mid);
        w += r->head + r->mid;
        memcpy(comp + w, text + r->orig + r->orig_len - r->tail, r->tail);
        w += r->tail;
        from = r->orig + r->orig_len;
    }
    memcpy(comp + w, text + from, len - from);
    w += len - from;
    comp[w] = '\0';
    /* a failure here leaves the decision to the regex on the whole text */
    if (sl_tok_pretok_split(p, comp, clen, &cs, err) != SL_OK) goto done;
    out->n = 0;
    run_walk wk = {0, 0};
    size_t start = 0;
    for (size_t k = 0; k < cs.n; k++) {
        size_t end;
        if (!map_boundary(&cuts, &wk, cs.v[k].off + cs.v[k].len, &end)) goto done;
        if (sl_tok_spans_push(out, start, end - start)) {
            rc = SL_ENOMEM;
            goto done;
        }
        start = end;
    }
    rc = 1;
done:
    sl_tok_spans_free(&cs);
    free(comp);
    free(cuts.v);
    return rc;
}

/* The pre-tokenizer split of valid UTF-8 text, with long runs shortened
 * before the regex where that gives the same pieces (see above), so that any
 * valid text splits. Same contract as sl_tok_pretok_split. */
int sl_tok_bpe_pretok_split(const sl_tok_pretok *p, const char *text, size_t len,
                            sl_tok_spans *out, sl_err *err)
{
    int rc = split_shortened(p, text, len, out, err);
    if (rc == 1) return SL_OK;
    if (rc < 0) return sl_err_set(err, rc, "out of memory splitting a %zu-byte text", len);
    return sl_tok_pretok_split(p, text, len, out, err);
}

int sl_tok_bpe_encode(const sl_tokenizer *tok, const char *text, size_t len, sl_tok_scratch *s,
                      sl_tok_ids *out, sl_err *err)
{
    const char *t = text;
    size_t tl = len;
    for (size_t i = 0; i < len;) {
        size_t k = sl_tok_utf8_valid_len((const unsigned char *)text + i, len - i);
        if (k == 0) {
            tl = sl_tok_utf8_sanitize(text, len, &s->text, &s->text_cap);
            if (tl == (size_t)-1) goto nomem;
            t = s->text;
            break;
        }
        i += k;
    }
    int rc = sl_tok_bpe_pretok_split(&tok->pretok, t, tl, &s->spans, err);
    if (rc) return rc;
    for (size_t k = 0; k < s->spans.n; k++) {
        const sl_tok_span *sp = &s->spans.v[k];
        if (encode_piece(tok, (const unsigned char *)t + sp->off, sp->len, s, out)) goto nomem;
    }
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory encoding a %zu-byte text", len);
}
