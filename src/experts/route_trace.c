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

typedef struct row row;

typedef struct parser {
    sl_route_trace *t;
    const char *name;
    int lineno;
    sl_err *err;
    row *rows;
    size_t n_rows, cap_rows;
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

/* One data row as read, before the table is built (rows may come in any
 * order: the recorder writes a prompt layer by layer, then a generated
 * token at a time). */
struct row {
    int32_t step, line;
    int16_t layer, slot;
    int32_t expert;
    float w;
    uint8_t phase;
};

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
    const int64_t max[9] = {0, 1, MAX_STEPS - 1, t->n_layer - 1, t->top_k - 1, t->n_expert - 1,
                            0, 1, (int64_t)1 << 40};
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
    if (p->n_rows == p->cap_rows) {
        const size_t cap = p->cap_rows ? 2 * p->cap_rows : 1024;
        row *r = realloc(p->rows, cap * sizeof *r);
        if (!r) return sl_err_set(p->err, SL_ENOMEM, "out of memory reading route trace '%s'",
                                  p->name);
        p->rows = r;
        p->cap_rows = cap;
    }
    p->rows[p->n_rows++] = (row){(int32_t)v[2], p->lineno, (int16_t)v[3], (int16_t)v[4],
                                 (int32_t)v[5], (float)weight, (uint8_t)v[1]};
    return SL_OK;
}

/* The table from the rows: no (step, layer, slot) twice, no expert twice
 * in a (step, layer), one phase per step, prompt steps first. */
static int build(parser *p)
{
    sl_route_trace *t = p->t;
    int max_step = -1;
    for (size_t i = 0; i < p->n_rows; i++)
        if (p->rows[i].step > max_step) max_step = p->rows[i].step;
    if (max_step < 0)
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s': no rows after the header "
                          "(the file ends at line %d)", p->name, p->lineno);
    /* every step needs at least top-k rows: a larger step number is damage,
     * and would only make the table huge */
    if ((uint64_t)(max_step + 1) * (uint64_t)t->top_k > (uint64_t)p->n_rows) {
        for (size_t i = 0; i < p->n_rows; i++)
            if (p->rows[i].step == max_step) {
                p->lineno = p->rows[i].line;
                break;
            }
        return sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'step': step %d, "
                          "but the file's %zu rows hold at most %zu steps", p->name, p->lineno,
                          max_step, p->n_rows, p->n_rows / (size_t)t->top_k);
    }
    t->n_steps = max_step + 1;
    const size_t n = (size_t)t->n_steps * step_size(t);
    t->ids = malloc(n * sizeof *t->ids);
    t->w = malloc(n * sizeof *t->w);
    t->have = calloc(n, 1);
    t->line = calloc((size_t)t->n_steps * (size_t)t->n_layer, sizeof *t->line);
    int8_t *phase = malloc((size_t)t->n_steps);
    int32_t *phase_line = malloc(sizeof(int32_t) * (size_t)t->n_steps);
    if (!t->ids || !t->w || !t->have || !t->line || !phase || !phase_line) {
        free(phase);
        free(phase_line);
        return sl_err_set(p->err, SL_ENOMEM, "out of memory reading route trace '%s'", p->name);
    }
    memset(phase, -1, (size_t)t->n_steps);
    int rc = SL_OK;
    for (size_t i = 0; i < p->n_rows && !rc; i++) {
        const row *r = &p->rows[i];
        const size_t first = (size_t)r->step * step_size(t) + (size_t)r->layer * (size_t)t->top_k;
        const size_t at = first + (size_t)r->slot;
        if (phase[r->step] < 0) {
            phase[r->step] = (int8_t)r->phase;
            phase_line[r->step] = r->line;
        } else if (phase[r->step] != r->phase) {
            rc = sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'phase': step %d "
                            "is phase %d here but phase %d on line %d", p->name, r->line,
                            r->step, r->phase, phase[r->step], phase_line[r->step]);
            break;
        }
        if (t->have[at]) {
            rc = sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d: a second row for step "
                            "%d layer %d slot %d", p->name, r->line, r->step, r->layer, r->slot);
            break;
        }
        for (int j = 0; j < t->top_k; j++)
            if (t->have[first + (size_t)j] && t->ids[first + (size_t)j] == r->expert) {
                rc = sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'expert': "
                                "expert %d is already in slot %d of step %d layer %d", p->name,
                                r->line, r->expert, j, r->step, r->layer);
                break;
            }
        t->have[at] = 1;
        t->ids[at] = r->expert;
        t->w[at] = r->w;
        int32_t *ln = &t->line[(size_t)r->step * (size_t)t->n_layer + (size_t)r->layer];
        if (!*ln || r->line < *ln) *ln = r->line;
    }
    /* prompt steps 0..P-1, then generation steps */
    for (int s = 0; s < t->n_steps && !rc; s++) {
        if (phase[s] < 0)
            rc = sl_err_set(p->err, SL_EFORMAT, "route trace '%s': step %d has no rows (steps "
                            "0..%d appear)", p->name, s, max_step);
        else if (phase[s] == 0 && s > 0 && phase[s - 1] == 1)
            rc = sl_err_set(p->err, SL_EFORMAT, "route trace '%s' line %d field 'phase': prompt "
                            "step %d after generation step %d (prompt steps come first)",
                            p->name, phase_line[s], s, s - 1);
        else if (phase[s] == 0)
            t->n_prompt = s + 1;
    }
    free(phase);
    free(phase_line);
    return rc;
}

/* Every (step, layer) complete (or filled by the last-layer rule), its
 * weights not increasing with the slot and summing to 1. */
static int finish(parser *p)
{
    sl_route_trace *t = p->t;
    const int K = t->top_k, L = t->n_layer;
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
    if ((rc = build(p))) return rc;
    return finish(p);
}

int sl_route_trace_parse(sl_route_trace **out, const char *text, size_t len, const char *name,
                         sl_err *err)
{
    *out = NULL;
    sl_route_trace *t = calloc(1, sizeof *t);
    if (!t) return sl_err_set(err, SL_ENOMEM, "out of memory reading route trace '%s'", name);
    parser p = {t, name, 0, err, NULL, 0, 0};
    int rc = parse_lines(&p, text, len);
    free(p.rows);
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
