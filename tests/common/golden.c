/* golden.c - see golden.h. */
#include "common/golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"

static const char sep[] = "\n__ggml_vocab_test__\n";

int t_golden_open(t_golden *g, const char *inp_path, const char *out_path)
{
    memset(g, 0, sizeof *g);
    size_t inp_len, out_len;
    g->inp = t_read_all(inp_path, &inp_len);
    g->out = t_read_all(out_path, &out_len);
    g->cap = 256;
    g->ids = malloc(g->cap * sizeof *g->ids);
    if (!g->inp || !g->out || !g->ids) {
        t_golden_close(g);
        return -1;
    }
    g->next = g->inp;
    g->end = g->inp + inp_len;
    g->line = g->out;
    g->want = g->ids;
    return 0;
}

/* Appends id to g->ids, growing it; false when memory runs out. */
static bool push_id(t_golden *g, int32_t id)
{
    if (g->n_want == g->cap) {
        size_t cap = 2 * g->cap;
        int32_t *ids = realloc(g->ids, cap * sizeof *ids);
        if (!ids) return false;
        g->ids = ids;
        g->want = ids;
        g->cap = cap;
    }
    g->ids[g->n_want++] = id;
    return true;
}

bool t_golden_next_line(t_golden *g)
{
    if (g->next >= g->end) return false;
    char *s = memmem(g->next, (size_t)(g->end - g->next), sep, sizeof sep - 1);
    if (!s) return false;
    char *nl = strchr(g->line, '\n');
    if (!nl) {
        g->out_short = true;
        return false;
    }
    *nl = '\0';
    g->out_line = g->line;
    g->line = nl + 1;
    g->text = g->next;
    g->len = (size_t)(s - g->next);
    g->next = s + sizeof sep - 1;
    return true;
}

bool t_golden_next(t_golden *g)
{
    if (!t_golden_next_line(g)) return false;
    g->n_want = 0;
    for (const char *q = g->out_line; *q;) {
        while (*q == ' ') q++;
        if (!*q) break;
        char *after;
        long id = strtol(q, &after, 10);
        if (after == q || !push_id(g, (int32_t)id)) return false; /* not a number, or no memory */
        q = after;
    }
    return true;
}

void t_golden_print_ids(const char *label, const int32_t *ids, size_t n)
{
    fprintf(stderr, "    %s:", label);
    for (size_t i = 0; i < n && i < 64; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "%s\n", n > 64 ? " ..." : "");
}

bool t_golden_encode_check(const t_golden *g, const sl_tokenizer *tok, unsigned flags,
                           sl_tok_ids *ids, const char *label, int case_no, int *rc)
{
    ids->n = 0;
    sl_err err = {0};
    const int r = sl_tokenizer_encode(tok, g->text, g->len, flags, ids, &err);
    if (rc) *rc = r;
    if (r == 0 && ids->n == g->n_want &&
        (g->n_want == 0 || !memcmp(ids->ids, g->want, g->n_want * sizeof *g->want)))
        return true;
    fprintf(stderr, "  %s case %d (%zu bytes: %.*s) differs%s%s\n", label, case_no, g->len,
            (int)(g->len < 60 ? g->len : 60), g->text, r ? ": " : "", r ? err.msg : "");
    t_golden_print_ids("want", g->want, g->n_want);
    t_golden_print_ids("got ", ids->ids, ids->n);
    return false;
}

char *t_unhex(const char *h, size_t hn, size_t *n)
{
    char *out = malloc(hn / 2 + 1);
    if (!out) return NULL;
    for (size_t i = 0; i + 1 < hn; i += 2) {
        char two[3] = {h[i], h[i + 1], 0};
        out[i / 2] = (char)strtol(two, NULL, 16);
    }
    *n = hn / 2;
    out[*n] = '\0';
    return out;
}

int t_hex_vocab_read(const char *path, uint32_t n_vocab, char **owned, sl_tok_str *tokens,
                     int32_t *types)
{
    size_t len;
    char *text = t_read_all(path, &len);
    if (!text) return -1;
    int n_lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        long id = strtol(line, &line, 10);
        long type = strtol(line + 1, &line, 10);
        line++;
        if (id < 0 || id >= (long)n_vocab) continue;
        free(owned[id]);
        size_t tn;
        owned[id] = t_unhex(line, strlen(line), &tn);
        tokens[id] = (sl_tok_str){owned[id], tn};
        types[id] = (int32_t)type;
        n_lines++;
    }
    free(text);
    return n_lines;
}

int t_hex_merges_read(const char *path, sl_tok_str **merges, char ***text, uint32_t *n)
{
    size_t len;
    char *file = t_read_all(path, &len);
    if (!file) return -1;
    size_t cap = 1024;
    *merges = malloc(cap * sizeof **merges);
    *text = malloc(cap * sizeof **text);
    *n = 0;
    for (char *line = strtok(file, "\n"); line; line = strtok(NULL, "\n")) {
        char *a = strchr(line, '\t') + 1, *b = strchr(a, '\t') + 1;
        size_t an, bn;
        char *l = t_unhex(a, (size_t)(b - 1 - a), &an), *r = t_unhex(b, strlen(b), &bn);
        char *m = malloc(an + bn + 2);
        memcpy(m, l, an);
        m[an] = ' ';
        memcpy(m + an + 1, r, bn + 1);
        free(l);
        free(r);
        if (*n == cap) {
            cap *= 2;
            *merges = realloc(*merges, cap * sizeof **merges);
            *text = realloc(*text, cap * sizeof **text);
        }
        (*text)[*n] = m;
        (*merges)[(*n)++] = (sl_tok_str){m, an + bn + 1};
    }
    free(file);
    return 0;
}

void t_golden_close(t_golden *g)
{
    free(g->inp);
    free(g->out);
    free(g->ids);
    memset(g, 0, sizeof *g);
}
