/* route_trace.c - see route_trace.h. */
#include "experts/route_trace.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

enum {
    MAX_LAYER = 4096,
    MAX_EXPERT = 65536,
    MAX_TOP_K = 256,
    MAX_STEPS = 1 << 20,
    MAX_LINE = 4096,
};

struct sl_route_trace {
    int n_layer, n_expert, top_k;
    int n_steps, n_prompt, n_filled;
    int cap_steps;
    int32_t *ids;      /* [step][layer][slot] */
    float *w;          /* same shape */
    uint8_t *have;     /* same shape: the row was read */
    int32_t *line;     /* [step][layer]: line of its first row, 0 if none */
    int64_t cursor, wraps;
};

static const char *const FIELD[9] = {"turn", "phase", "step", "layer", "slot",
                                     "expert", "weight", "residency", "expert_bytes"};
static const char COLUMNS[] = "turn,phase,step,layer,slot,expert,weight,residency,expert_bytes";

void sl_route_trace_free(sl_route_trace *t)
{
    if (!t) return;
    free(t->ids);
    free(t->w);
    free(t->have);
    free(t->line);
    free(t);
}

/* A decimal integer 0..max, all of s[0..n) (no sign, no spaces). */
static bool parse_uint(const char *s, size_t n, int64_t max, int64_t *out)
{
    if (n == 0 || n > 12) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max) return false;
    *out = v;
    return true;
}

/* A finite real, all of s[0..n). */
static bool parse_real(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (buf[0] == ' ' || buf[0] == '\t' || buf[0] == '+') return false;
    char *end;
    const double v = strtod(buf, &end);
    if (end != buf + n || !isfinite(v)) return false;
    *out = v;
    return true;
}

typedef struct parser {
    sl_route_trace *t;
    const char *name;
    int lineno;
    sl_err *err;
} parser;

static int bad(parser *p, const char *fmt, const char *a, const char *b)
{
    return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d: %s%s%s", p->name,
                      p->lineno, fmt, a ? a : "", b ? b : "");
}

/* The value of key=V among the space-separated words of s[0..n). */
static int header_value(parser *p, const char *s, size_t n, const char *key, int64_t max,
                        int64_t *out)
{
    const size_t kl = strlen(key);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != ' ') j++;
        if (j - i > kl && !memcmp(s + i, key, kl) && s[i + kl] == '=') {
            if (!parse_uint(s + i + kl + 1, j - i - kl - 1, max, out) || *out < 1)
                return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d: %s='%.*s' "
                                  "is not a whole number in 1..%lld", p->name, p->lineno, key,
                                  (int)(j - i - kl - 1), s + i + kl + 1, (long long)max);
            return SL_OK;
        }
        i = j + 1;
    }
    return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d: the model header has no "
                      "%s= (expected '# model=... n_layer=L n_expert=X n_expert_used=K')",
                      p->name, p->lineno, key);
}

static int model_header(parser *p, const char *s, size_t n)
{
    int64_t l, x, k;
    int rc;
    if ((rc = header_value(p, s, n, "n_layer", MAX_LAYER, &l)) ||
        (rc = header_value(p, s, n, "n_expert", MAX_EXPERT, &x)) ||
        (rc = header_value(p, s, n, "n_expert_used", MAX_TOP_K, &k)))
        return rc;
    if (k > x)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d: n_expert_used=%lld "
                          "is more than n_expert=%lld", p->name, p->lineno, (long long)k,
                          (long long)x);
    p->t->n_layer = (int)l;
    p->t->n_expert = (int)x;
    p->t->top_k = (int)k;
    return SL_OK;
}

/* Entries of one step: layers x top-k. */
static size_t step_size(const sl_route_trace *t) { return (size_t)t->n_layer * (size_t)t->top_k; }

/* Makes room for step s (s <= n_steps: steps come in order). */
static int add_step(parser *p, int s)
{
    sl_route_trace *t = p->t;
    if (s < t->n_steps) return SL_OK;
    if (s >= MAX_STEPS) return bad(p, "more steps than sluice replays (1048576)", NULL, NULL);
    if (s >= t->cap_steps) {
        const int cap = t->cap_steps ? 2 * t->cap_steps : 64;
        const size_t per = step_size(t), n = per * (size_t)cap;
        int32_t *ids = realloc(t->ids, n * sizeof *ids);
        if (ids) t->ids = ids;
        float *w = realloc(t->w, n * sizeof *w);
        if (w) t->w = w;
        uint8_t *have = realloc(t->have, n);
        if (have) t->have = have;
        int32_t *line = realloc(t->line, (size_t)cap * (size_t)t->n_layer * sizeof *line);
        if (line) t->line = line;
        if (!ids || !w || !have || !line)
            return sl_err_set(p->err, SL_ENOMEM, "out of memory reading route trace '%s'",
                              p->name);
        t->cap_steps = cap;
    }
    memset(t->have + (size_t)s * step_size(t), 0, step_size(t));
    memset(t->line + (size_t)s * (size_t)t->n_layer, 0, sizeof(int32_t) * (size_t)t->n_layer);
    t->n_steps = s + 1;
    return SL_OK;
}

static int data_row(parser *p, const char *s, size_t n)
{
    sl_route_trace *t = p->t;
    const char *f[9];
    size_t fl[9];
    int nf = 0;
    for (size_t i = 0, start = 0; i <= n; i++) {
        if (i < n && s[i] != ',') continue;
        if (nf == 9) return bad(p, "more than 9 fields (expected ", COLUMNS, ")");
        f[nf] = s + start;
        fl[nf++] = i - start;
        start = i + 1;
    }
    if (nf != 9) return bad(p, "fewer than 9 fields (expected ", COLUMNS, ")");
    const int64_t max[9] = {0, 1, MAX_STEPS, t->n_layer - 1, t->top_k - 1, t->n_expert - 1, 0,
                            1, (int64_t)1 << 40};
    int64_t v[9];
    double weight = 0;
    for (int i = 0; i < 9; i++) {
        if (i == 6) {
            if (!parse_real(f[i], fl[i], &weight) || weight < 0 || weight > 1)
                return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'weight': "
                                  "'%.*s' is not a number in [0, 1]", p->name, p->lineno,
                                  (int)fl[i], f[i]);
            continue;
        }
        if (!parse_uint(f[i], fl[i], max[i], &v[i])) {
            if (i == 0)
                return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'turn': "
                                  "'%.*s': only single-turn traces (turn 0) are replayed",
                                  p->name, p->lineno, (int)fl[i], f[i]);
            char tail[96] = "";
            if (i == 3) snprintf(tail, sizeof tail, " (the header's n_layer=%d)", t->n_layer);
            if (i == 4)
                snprintf(tail, sizeof tail, " (the header's n_expert_used=%d)", t->top_k);
            if (i == 5) snprintf(tail, sizeof tail, " (the header's n_expert=%d)", t->n_expert);
            return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field '%s': '%.*s' "
                              "is not a whole number in 0..%lld%s", p->name, p->lineno, FIELD[i],
                              (int)fl[i], f[i], (long long)max[i], tail);
        }
    }
    const int phase = (int)v[1], step = (int)v[2], layer = (int)v[3], slot = (int)v[4];
    /* steps in order, none skipped; prompt steps first */
    if (step < t->n_steps - 1 || step > t->n_steps)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'step': step %d "
                          "after step %d (rows go in step order, no step missing)", p->name,
                          p->lineno, step, t->n_steps - 1);
    if (phase == 0 && t->n_prompt < t->n_steps && step >= t->n_prompt)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'phase': a prompt "
                          "row (phase 0) after generation rows began at step %d", p->name,
                          p->lineno, t->n_prompt);
    int rc = add_step(p, step);
    if (rc) return rc;
    if (phase == 0) t->n_prompt = step + 1;
    else if (t->n_prompt > step)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'phase': step %d "
                          "has prompt and generation rows", p->name, p->lineno, step);
    const size_t at = (size_t)step * step_size(t) + (size_t)layer * (size_t)t->top_k + (size_t)slot;
    if (t->have[at])
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d: a second row for step "
                          "%d layer %d slot %d", p->name, p->lineno, step, layer, slot);
    const size_t first = at - (size_t)slot;
    for (int j = 0; j < t->top_k; j++)
        if (t->have[first + (size_t)j] && t->ids[first + (size_t)j] == (int32_t)v[5])
            return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'expert': "
                              "expert %lld is already in slot %d of step %d layer %d", p->name,
                              p->lineno, (long long)v[5], j, step, layer);
    t->have[at] = 1;
    t->ids[at] = (int32_t)v[5];
    t->w[at] = (float)weight;
    int32_t *ln = &t->line[(size_t)step * (size_t)t->n_layer + (size_t)layer];
    if (!*ln) *ln = p->lineno;
    return SL_OK;
}

/* Every (step, layer) complete (or filled by the last-layer rule), its
 * weights not increasing with the slot and summing to 1. */
static int finish(parser *p)
{
    sl_route_trace *t = p->t;
    const int K = t->top_k, L = t->n_layer;
    if (t->n_steps == 0)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s': no rows after the header "
                          "(the file ends at line %d)", p->name, p->lineno);
    const size_t last_prompt = t->n_prompt > 0 ? (size_t)(t->n_prompt - 1) : 0;
    for (int s = 0; s < t->n_steps; s++)
        for (int l = 0; l < L; l++) {
            const size_t first = (size_t)s * step_size(t) + (size_t)l * (size_t)K;
            int n_have = 0;
            for (int j = 0; j < K; j++) n_have += t->have[first + (size_t)j];
            const int line = t->line[(size_t)s * (size_t)L + (size_t)l];
            if (n_have == 0 && l == L - 1 && s + 1 < t->n_prompt) {
                const size_t src = last_prompt * step_size(t) + (size_t)l * (size_t)K;
                int src_have = 0;
                for (int j = 0; j < K; j++) src_have += t->have[src + (size_t)j];
                if (src_have == K) {
                    memcpy(t->ids + first, t->ids + src, sizeof(int32_t) * (size_t)K);
                    memcpy(t->w + first, t->w + src, sizeof(float) * (size_t)K);
                    memset(t->have + first, 1, (size_t)K);
                    t->n_filled++;
                    continue;
                }
            }
            if (n_have < K) {
                int miss = 0;
                while (t->have[first + (size_t)miss]) miss++;
                if (n_have == 0)
                    return sl_err_set(p->err, SL_EFORMAT, "route trace '%s': step %d (%s) has no "
                                      "rows for layer %d of %d", p->name, s,
                                      s < t->n_prompt ? "prompt" : "generation", l, L);
                return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d: step %d layer %d "
                                  "has %d of its %d slots (slot %d missing)", p->name, line, s, l,
                                  n_have, K, miss);
            }
            double sum = 0;
            for (int j = 0; j < K; j++) {
                const float w = t->w[first + (size_t)j];
                sum += w;
                if (j > 0 && w > t->w[first + (size_t)j - 1] + 1e-6f)
                    return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field "
                                      "'weight': step %d layer %d slot %d weighs %g, more than "
                                      "slot %d (%g): slots go in rank order", p->name, line, s, l,
                                      j, (double)w, j - 1, (double)t->w[first + (size_t)j - 1]);
            }
            if (fabs(sum - 1.0) > 1e-3)
                return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'weight': "
                                  "the %d weights of step %d layer %d sum to %.6f, not 1", p->name,
                                  line, K, s, l, sum);
        }
    return SL_OK;
}

static int parse_lines(parser *p, const char *text, size_t len)
{
    enum { MAGIC, HEADER, ROWS } state = MAGIC;
    const void *nul = memchr(text, '\0', len);
    if (nul)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s': byte %zu is NUL: not a text "
                          "file", p->name, (size_t)((const char *)nul - text));
    int rc;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        const char *s = text + i;
        i += n + (nl ? 1 : 0);
        p->lineno++;
        if (n > 0 && s[n - 1] == '\r') n--;
        if (n > MAX_LINE) return bad(p, "longer than 4096 bytes", NULL, NULL);
        if (state == MAGIC) {
            if (n != 16 || memcmp(s, "# route_trace v1", 16))
                return bad(p, "not a route trace: the first line must be '# route_trace v1'",
                           NULL, NULL);
            state = HEADER;
        } else if (n == 0) {
            return bad(p, "an empty line", NULL, NULL);
        } else if (state == HEADER && s[0] == '#') {
            if (n > 8 && !memcmp(s, "# layer=", 8)) {
                if (!p->t->n_layer)
                    return bad(p, "a '# layer=' line before the model header", NULL, NULL);
                int64_t l;
                size_t j = 8;
                while (j < n && s[j] != ' ') j++;
                if (!parse_uint(s + 8, j - 8, p->t->n_layer - 1, &l))
                    return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field "
                                      "'layer': '%.*s' is not a layer in 0..%d", p->name,
                                      p->lineno, (int)(j - 8), s + 8, p->t->n_layer - 1);
            } else if (n > 8 && !memcmp(s, "# model=", 8)) {
                if (p->t->n_layer) return bad(p, "a second model header", NULL, NULL);
                if ((rc = model_header(p, s + 2, n - 2))) return rc;
            } else {
                return bad(p, "an unknown header line (expected '# model=...' or "
                           "'# layer=...')", NULL, NULL);
            }
        } else if (state == HEADER) {
            if (!p->t->n_layer) return bad(p, "rows before the '# model=...' header", NULL, NULL);
            if (n != sizeof COLUMNS - 1 || memcmp(s, COLUMNS, n))
                return bad(p, "the column line must be '", COLUMNS, "'");
            state = ROWS;
        } else if ((rc = data_row(p, s, n))) {
            return rc;
        }
    }
    if (state != ROWS)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s': ends at line %d before its "
                          "column line and rows", p->name, p->lineno);
    return finish(p);
}

int sl_route_trace_parse(sl_route_trace **out, const char *text, size_t len, const char *name,
                         sl_err *err)
{
    *out = NULL;
    sl_route_trace *t = calloc(1, sizeof *t);
    if (!t) return sl_err_set(err, SL_ENOMEM, "out of memory reading route trace '%s'", name);
    parser p = {t, name, 0, err};
    int rc = parse_lines(&p, text, len);
    if (rc) {
        sl_route_trace_free(t);
        return rc;
    }
    *out = t;
    return SL_OK;
}

int sl_route_trace_load(sl_route_trace **out, const char *path, sl_err *err)
{
    char *buf;
    size_t len;
    *out = NULL;
    int rc = sl_file_read_all(path, (uint64_t)1 << 30, &buf, &len, err);
    if (rc) return sl_err_prefix(err, "cannot read route trace '%s'", path);
    rc = sl_route_trace_parse(out, buf, len, path, err);
    free(buf);
    return rc;
}

int sl_route_trace_check(const sl_route_trace *t, int n_layer, int n_expert, int top_k,
                         sl_err *err)
{
    if (t->n_layer != n_layer)
        return sl_err_set(err, SL_EINVAL, "the route trace has n_layer=%d but the model has %d "
                          "layers (make one with mkmodel --layers %d)", t->n_layer, n_layer,
                          t->n_layer);
    if (t->n_expert != n_expert)
        return sl_err_set(err, SL_EINVAL, "the route trace has n_expert=%d but the model has %d "
                          "experts per layer (mkmodel --experts %d)", t->n_expert, n_expert,
                          t->n_expert);
    if (t->top_k != top_k)
        return sl_err_set(err, SL_EINVAL, "the route trace has n_expert_used=%d but the model "
                          "uses top-%d (mkmodel --top-k %d)", t->top_k, top_k, t->top_k);
    return SL_OK;
}

int sl_route_trace_n_layer(const sl_route_trace *t) { return t->n_layer; }
int sl_route_trace_n_expert(const sl_route_trace *t) { return t->n_expert; }
int sl_route_trace_top_k(const sl_route_trace *t) { return t->top_k; }
int sl_route_trace_n_steps(const sl_route_trace *t) { return t->n_steps; }
int sl_route_trace_n_prompt(const sl_route_trace *t) { return t->n_prompt; }
int sl_route_trace_n_filled(const sl_route_trace *t) { return t->n_filled; }

void sl_route_trace_choice(const sl_route_trace *t, int64_t step, int layer, int *ids, float *w)
{
    SL_ASSERT(layer >= 0 && layer < t->n_layer && step >= 0);
    const size_t at = (size_t)(step % t->n_steps) * step_size(t) + (size_t)layer * (size_t)t->top_k;
    for (int j = 0; j < t->top_k; j++) {
        ids[j] = t->ids[at + (size_t)j];
        w[j] = t->w[at + (size_t)j];
    }
}

int64_t sl_route_trace_cursor(const sl_route_trace *t) { return t->cursor; }

void sl_route_trace_advance(sl_route_trace *t, int n)
{
    const int64_t before = t->cursor / t->n_steps;
    t->cursor += n;
    t->wraps += t->cursor / t->n_steps - before;
}

int64_t sl_route_trace_wraps(const sl_route_trace *t) { return t->wraps; }
