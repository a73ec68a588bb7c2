/* synth_vocab.c - BPE training over the built-in corpus (see synth_vocab.h).
 *
 * Owns: splitting the corpus into pre-tokenizer pieces (PCRE2), the greedy
 * merge loop and the final token / merge string arrays. Must not know about
 * GGUF: synth_write.c copies the arrays into metadata. */
#include "synth/synth_vocab.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sl_synth_byte_to_utf8(uint8_t b, char out[3])
{
    uint32_t cp;
    if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae)) {
        cp = b;
    } else {
        /* Non-printable bytes are numbered in byte order from 256. */
        uint32_t k = 0;
        for (uint32_t x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae))) k++;
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = '\0';
        return 1;
    }
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    out[2] = '\0';
    return 2;
}

/* A token during training: its raw bytes (to detect a merge that spells an
 * existing token) and its display spelling. */
typedef struct tok {
    char *raw;
    size_t raw_len;
    char *disp;
} tok;

typedef struct word {
    uint32_t *ids;
    uint32_t len;
    uint32_t freq;
} word;

typedef struct piece {
    const char *p;
    size_t len;
} piece;

static int piece_cmp(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    if (c) return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* Splits text into pieces with the pre-tokenizer pattern; bytes the pattern
 * skips (none for this pattern, which matches every character) would become
 * pieces of their own so nothing is lost. */
static int split_pieces(const char *text, piece **out, size_t *n_out, sl_err *err)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)SL_SYNTH_PRE_PATTERN, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR buf[128];
        pcre2_get_error_message(ec, buf, sizeof buf);
        return sl_err_set(err, SL_EINVAL, "pre-tokenizer pattern does not compile at %zu: %s",
                          (size_t)eo, (const char *)buf);
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    size_t len = strlen(text), cap = 1024, n = 0, pos = 0;
    piece *ps = malloc(cap * sizeof *ps);
    int rc = SL_OK;
    if (!md || !ps) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory splitting the tokenizer corpus");
        goto done;
    }
    while (pos < len) {
        int m = pcre2_match(re, (PCRE2_SPTR)text, len, pos, 0, md, NULL);
        size_t s = len, e = len;
        if (m >= 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            s = ov[0];
            e = ov[1];
        } else if (m != PCRE2_ERROR_NOMATCH) {
            rc = sl_err_set(err, SL_EINVAL, "pre-tokenizer match failed (PCRE2 error %d)", m);
            goto done;
        }
        for (int k = 0; k < 2; k++) {
            /* k = 0: a skipped gap [pos, s); k = 1: the match [s, e). */
            size_t a = k ? s : pos, b = k ? e : s;
            if (b <= a) continue;
            if (n == cap) {
                cap *= 2;
                piece *np = realloc(ps, cap * sizeof *np);
                if (!np) {
                    rc = sl_err_set(err, SL_ENOMEM, "out of memory splitting the corpus");
                    goto done;
                }
                ps = np;
            }
            ps[n].p = text + a;
            ps[n].len = b - a;
            n++;
        }
        pos = e > pos ? e : pos + 1; /* an empty match must still advance */
    }
done:
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    if (rc) {
        free(ps);
        return rc;
    }
    *out = ps;
    *n_out = n;
    return SL_OK;
}

/* Pair counts in a small open-addressing table, rebuilt every round. */
typedef struct pair_slot {
    uint32_t a, b;
    uint32_t count; /* 0 = empty */
} pair_slot;

static uint32_t pair_hash(uint32_t a, uint32_t b, uint32_t mask)
{
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40) & mask;
}

static char *concat(const char *a, size_t la, const char *sep, const char *b, size_t lb)
{
    size_t ls = strlen(sep);
    char *s = malloc(la + ls + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    memcpy(s + la, sep, ls);
    memcpy(s + la + ls, b, lb);
    s[la + ls + lb] = '\0';
    return s;
}

void sl_synth_vocab_free(sl_synth_vocab *v)
{
    if (!v) return;
    if (v->tokens)
        for (uint32_t i = 0; i < v->n_tokens; i++) free(v->tokens[i]);
    if (v->merges)
        for (uint32_t i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->tokens);
    free(v->types);
    free(v->merges);
    memset(v, 0, sizeof *v);
}

int sl_synth_vocab_build(sl_synth_vocab *v, uint32_t n_vocab, sl_err *err)
{
    memset(v, 0, sizeof *v);
    if (n_vocab < SL_SYNTH_VOCAB_MIN)
        return sl_err_set(err, SL_EINVAL, "vocabulary size %u below the minimum %u", n_vocab,
                          SL_SYNTH_VOCAB_MIN);
    uint32_t budget = n_vocab - 256 - SL_SYNTH_N_SPECIAL;
    if (budget > SL_SYNTH_MAX_MERGES) budget = SL_SYNTH_MAX_MERGES;

    piece *ps = NULL;
    size_t n_ps = 0, n_words = 0, n_toks = 0, n_merges = 0;
    word *words = NULL;
    tok *toks = NULL;
    char **merges = NULL;
    pair_slot *tab = NULL;
    int rc = split_pieces(sl_synth_corpus(), &ps, &n_ps, err);
    if (rc) return rc;

    /* Unique pieces with their frequencies, in byte order (deterministic). */
    qsort(ps, n_ps, sizeof *ps, piece_cmp);
    size_t tab_cap = 1;
    words = calloc(n_ps ? n_ps : 1, sizeof *words);
    toks = calloc(256 + budget, sizeof *toks);
    merges = calloc(SL_SYNTH_MAX_MERGES, sizeof *merges);
    if (!words || !toks || !merges) goto oom;
    for (size_t i = 0; i < n_ps; i++) {
        if (n_words && !piece_cmp(&ps[i], &ps[i - 1])) {
            words[n_words - 1].freq++;
            continue;
        }
        word *w = &words[n_words++];
        w->ids = malloc(ps[i].len * sizeof *w->ids);
        if (!w->ids) goto oom;
        for (size_t k = 0; k < ps[i].len; k++) w->ids[k] = (uint8_t)ps[i].p[k];
        w->len = (uint32_t)ps[i].len;
        w->freq = 1;
        tab_cap += ps[i].len;
    }
    while (tab_cap & (tab_cap - 1)) tab_cap++; /* power of two >= pairs + 1 */
    tab_cap *= 2;
    tab = malloc(tab_cap * sizeof *tab);
    if (!tab) goto oom;

    for (uint32_t b = 0; b < 256; b++) {
        char d[3];
        sl_synth_byte_to_utf8((uint8_t)b, d);
        char raw = (char)b;
        toks[b].raw = concat(&raw, 1, "", "", 0);
        toks[b].raw_len = 1;
        toks[b].disp = concat(d, strlen(d), "", "", 0);
        if (!toks[b].raw || !toks[b].disp) goto oom;
    }
    n_toks = 256;

    while (n_toks - 256 < budget && n_merges < SL_SYNTH_MAX_MERGES) {
        memset(tab, 0, tab_cap * sizeof *tab);
        uint32_t mask = (uint32_t)tab_cap - 1;
        for (size_t i = 0; i < n_words; i++) {
            const word *w = &words[i];
            for (uint32_t k = 0; k + 1 < w->len; k++) {
                uint32_t a = w->ids[k], b = w->ids[k + 1];
                uint32_t h = pair_hash(a, b, mask);
                while (tab[h].count && (tab[h].a != a || tab[h].b != b)) h = (h + 1) & mask;
                tab[h].a = a;
                tab[h].b = b;
                tab[h].count += w->freq;
            }
        }
        /* Most frequent pair; ties go to the smallest (left id, right id), so
         * the result never depends on the table's iteration order. */
        pair_slot best = {0, 0, 0};
        for (size_t h = 0; h < tab_cap; h++) {
            const pair_slot *s = &tab[h];
            if (!s->count) continue;
            if (s->count > best.count ||
                (s->count == best.count &&
                 (s->a < best.a || (s->a == best.a && s->b < best.b))))
                best = *s;
        }
        /* Training runs to exhaustion (until every corpus piece is one
         * token, ~670 merges) unless the budget stops it first: more real
         * tokens make sampled text from a random model read less like
         * padding. */
        if (best.count < 1) break;

        const tok *l = &toks[best.a], *r = &toks[best.b];
        char *raw = concat(l->raw, l->raw_len, "", r->raw, r->raw_len);
        if (!raw) goto oom;
        size_t raw_len = l->raw_len + r->raw_len;
        /* Two different pairs can spell the same bytes ("a"+"bc", "ab"+"c");
         * the merge then maps to the existing token, as in a vocab map. */
        uint32_t id = (uint32_t)n_toks;
        for (uint32_t t = 256; t < n_toks; t++)
            if (toks[t].raw_len == raw_len && !memcmp(toks[t].raw, raw, raw_len)) id = t;
        merges[n_merges] = concat(l->disp, strlen(l->disp), " ", r->disp, strlen(r->disp));
        if (!merges[n_merges]) {
            free(raw);
            goto oom;
        }
        n_merges++;
        if (id == n_toks) {
            toks[id].raw = raw;
            toks[id].raw_len = raw_len;
            toks[id].disp = concat(l->disp, strlen(l->disp), "", r->disp, strlen(r->disp));
            if (!toks[id].disp) goto oom;
            n_toks++;
        } else {
            free(raw);
        }
        for (size_t i = 0; i < n_words; i++) {
            word *w = &words[i];
            uint32_t o = 0;
            for (uint32_t k = 0; k < w->len; k++) {
                if (k + 1 < w->len && w->ids[k] == best.a && w->ids[k + 1] == best.b) {
                    w->ids[o++] = id;
                    k++;
                } else {
                    w->ids[o++] = w->ids[k];
                }
            }
            w->len = o;
        }
    }

    v->n_tokens = n_vocab;
    v->tokens = calloc(n_vocab, sizeof *v->tokens);
    v->types = calloc(n_vocab, sizeof *v->types);
    v->merges = calloc(n_merges ? n_merges : 1, sizeof *v->merges);
    if (!v->tokens || !v->types || !v->merges) goto oom;
    for (size_t t = 0; t < n_toks; t++) {
        v->tokens[t] = toks[t].disp;
        toks[t].disp = NULL;
        v->types[t] = SL_SYNTH_TOK_NORMAL;
    }
    v->n_learnt = (uint32_t)(n_toks - 256);
    static const char *const specials[SL_SYNTH_N_SPECIAL] = {"<|endoftext|>", "<|im_start|>",
                                                             "<|im_end|>"};
    for (int s = 0; s < SL_SYNTH_N_SPECIAL; s++) {
        v->tokens[n_toks + (size_t)s] = concat(specials[s], strlen(specials[s]), "", "", 0);
        if (!v->tokens[n_toks + (size_t)s]) goto oom;
        v->types[n_toks + (size_t)s] = SL_SYNTH_TOK_CONTROL;
    }
    v->eot_id = (int32_t)n_toks;
    v->im_start_id = (int32_t)n_toks + 1;
    v->im_end_id = (int32_t)n_toks + 2;
    v->bos_id = v->eot_id;
    v->pad_id = v->eot_id;
    v->eos_id = v->im_end_id;
    for (size_t t = n_toks + SL_SYNTH_N_SPECIAL, k = 0; t < n_vocab; t++, k++) {
        char buf[32];
        int len = snprintf(buf, sizeof buf, "<|pad_%zu|>", k);
        v->tokens[t] = concat(buf, (size_t)len, "", "", 0);
        if (!v->tokens[t]) goto oom;
        v->types[t] = SL_SYNTH_TOK_UNUSED;
    }
    for (size_t m = 0; m < n_merges; m++) {
        v->merges[m] = merges[m];
        merges[m] = NULL;
    }
    v->n_merges = (uint32_t)n_merges;
    rc = SL_OK;
    goto done;

oom:
    rc = sl_err_set(err, SL_ENOMEM, "out of memory training the synthetic tokenizer");
    sl_synth_vocab_free(v);
done:
    if (words)
        for (size_t i = 0; i < n_words; i++) free(words[i].ids);
    if (toks)
        for (size_t t = 0; t < 256 + budget; t++) {
            free(toks[t].raw);
            free(toks[t].disp);
        }
    if (merges)
        for (size_t m = 0; m < SL_SYNTH_MAX_MERGES; m++) free(merges[m]);
    free(words);
    free(toks);
    free(merges);
    free(tab);
    free(ps);
    return rc;
}
