/* usage_history.c - see usage_history.h. */
#include "experts/usage_history.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/file.h"
#include "util/out_file.h"

#define FILE_LIMIT (256ull << 20)
#define ID_MAX 200

struct sl_usage {
    int n_layer, n_expert;
    char id[ID_MAX + 1];
    double *score; /* (n_layer, n_expert) */
};

static bool id_ok(const char *id)
{
    const size_t n = strlen(id);
    if (n == 0 || n > ID_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        const char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

int sl_usage_create(sl_usage **out, const char *model_id, int n_layer, int n_expert,
                    sl_err *err)
{
    *out = NULL;
    if (n_layer < 1 || n_expert < 1 || n_layer > 100000 || n_expert > 100000)
        return sl_err_set(err, SL_EINVAL, "usage history needs 1..100000 layers and experts "
                          "(got %d and %d)", n_layer, n_expert);
    if (!id_ok(model_id))
        return sl_err_set(err, SL_EINVAL, "usage history model id '%.64s' must be 1..%d "
                          "letters, digits, '.', '_' or '-'", model_id, ID_MAX);
    sl_usage *u = calloc(1, sizeof *u);
    if (u) u->score = calloc((size_t)n_layer * (size_t)n_expert, sizeof *u->score);
    if (!u || !u->score) {
        sl_usage_free(u);
        return sl_err_set(err, SL_ENOMEM, "out of memory for a usage history of %d x %d",
                          n_layer, n_expert);
    }
    u->n_layer = n_layer;
    u->n_expert = n_expert;
    snprintf(u->id, sizeof u->id, "%s", model_id);
    *out = u;
    return SL_OK;
}

void sl_usage_free(sl_usage *u)
{
    if (!u) return;
    free(u->score);
    free(u);
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- loading ------------------------------------------------------------ */

typedef struct parser {
    const char *path;
    char *p, *end; /* the text, NUL-terminated at end */
    int line;
} parser;

/* The next line (without its newline, NUL-terminated in place), or NULL at
 * the end of the text or when the last line has no newline. */
static char *next_line(parser *ps)
{
    if (ps->p >= ps->end) return NULL;
    char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
    if (!nl) return NULL;
    *nl = '\0';
    char *l = ps->p;
    ps->p = nl + 1;
    ps->line++;
    return l;
}

static int bad(const parser *ps, sl_err *err, const char *what)
{
    return sl_err_set(err, SL_EFORMAT, "usage history '%s', line %d: %s", ps->path, ps->line,
                      what);
}

static int parse(sl_usage *u, char *text, size_t len, const char *path, double decay,
                 sl_err *err)
{
    parser ps = {path, text, text + len, 0};
    char *l = next_line(&ps);
    if (!l || strcmp(l, "sluice-usage 1") != 0)
        return bad(&ps, err, "expected the header 'sluice-usage 1'");
    l = next_line(&ps);
    if (!l || strncmp(l, "model ", 6) != 0) return bad(&ps, err, "expected 'model <id>'");
    if (strcmp(l + 6, u->id) != 0)
        return bad(&ps, err, "the history is of another model (its id differs)");
    l = next_line(&ps);
    int nl = 0, nx = 0, used = 0;
    if (!l || sscanf(l, "layers %d experts %d%n", &nl, &nx, &used) != 2 || l[used] != '\0')
        return bad(&ps, err, "expected 'layers <L> experts <X>'");
    if (nl != u->n_layer || nx != u->n_expert) {
        char msg[160];
        snprintf(msg, sizeof msg, "the history has %d layers x %d experts, the model %d x %d",
                 nl, nx, u->n_layer, u->n_expert);
        return bad(&ps, err, msg);
    }
    for (int il = 0; il < nl; il++) {
        if (!(l = next_line(&ps))) return bad(&ps, err, "the file ends before every layer's line");
        char *c = l;
        for (int e = 0; e < nx; e++) {
            if (e > 0 && *c++ != ' ') return bad(&ps, err, "expected one space between scores");
            if (*c < '0' || *c > '9') return bad(&ps, err, "a score is not a number >= 0");
            char *stop;
            errno = 0;
            const double v = strtod(c, &stop);
            if (stop == c || errno || !isfinite(v) || v < 0)
                return bad(&ps, err, "a score is not a finite number >= 0");
            u->score[(size_t)il * (size_t)nx + (size_t)e] = v * decay;
            c = stop;
        }
        if (*c != '\0') return bad(&ps, err, "more scores than experts on a layer's line");
    }
    const size_t body = (size_t)(ps.p - text);
    l = next_line(&ps);
    unsigned long long sum = 0;
    used = 0;
    if (!l || sscanf(l, "end %16llx%n", &sum, &used) != 1 || used != 20 || l[used] != '\0')
        return bad(&ps, err, "expected 'end <checksum>' after the last layer");
    if (ps.p != ps.end) return bad(&ps, err, "text after the 'end' line");
    /* the text before the end line was NUL-split while parsing: restore it */
    for (size_t i = 0; i < body; i++)
        if (text[i] == '\0') text[i] = '\n';
    if ((uint64_t)sum != fnv1a(text, body))
        return bad(&ps, err, "the checksum does not match the text (a damaged file)");
    return SL_OK;
}

int sl_usage_load(sl_usage **out, bool *found, const char *path, const char *model_id,
                  int n_layer, int n_expert, double decay, sl_err *err)
{
    *out = NULL;
    *found = false;
    if (!(decay > 0 && decay <= 1))
        return sl_err_set(err, SL_EINVAL, "usage history decay must be in (0, 1], got %g", decay);
    sl_usage *u;
    int rc = sl_usage_create(&u, model_id, n_layer, n_expert, err);
    if (rc) return rc;
    sl_file_id id;
    if ((rc = sl_file_identity(path, &id, err))) goto fail;
    if (!id.exists) {
        *out = u;
        return SL_OK;
    }
    char *text = NULL;
    size_t len = 0;
    if ((rc = sl_file_read_all(path, FILE_LIMIT, &text, &len, err))) goto fail;
    rc = parse(u, text, len, path, decay, err);
    free(text);
    if (rc) goto fail;
    *found = true;
    *out = u;
    return SL_OK;
fail:
    sl_usage_free(u);
    return rc;
}

/* ---- saving ------------------------------------------------------------- */

/* The whole text in a new buffer (*len bytes). */
static char *render(const sl_usage *u, size_t *len)
{
    size_t cap = 256 + (size_t)u->n_layer * (size_t)u->n_expert * 18, n = 0;
    char *b = malloc(cap);
    if (!b) return NULL;
    n += (size_t)snprintf(b + n, cap - n, "sluice-usage 1\nmodel %s\nlayers %d experts %d\n",
                          u->id, u->n_layer, u->n_expert);
    for (int il = 0; il < u->n_layer; il++) {
        for (int e = 0; e < u->n_expert; e++)
            n += (size_t)snprintf(b + n, cap - n, "%s%.9g", e ? " " : "",
                                  u->score[(size_t)il * (size_t)u->n_expert + (size_t)e]);
        b[n++] = '\n';
    }
    n += (size_t)snprintf(b + n, cap - n, "end %016llx\n", (unsigned long long)fnv1a(b, n));
    *len = n;
    return b;
}

/* A usage history replaces only another one (out_file.h). */
static const sl_out_kind usage_kind = {"a usage history", "sluice-usage ", 13};

int sl_usage_save(const sl_usage *u, const char *path, unsigned test_flags, sl_err *err)
{
    size_t len = 0;
    char *text = render(u, &len);
    if (!text) return sl_err_set(err, SL_ENOMEM, "out of memory writing the usage history");
    sl_out_file o;
    int rc = sl_out_open(&o, path, &usage_kind, err);
    if (!rc) {
        const bool fail = test_flags & SL_USAGE_TEST_FAIL_WRITE;
        rc = sl_out_write(&o, text, fail ? len / 2 : len, err);
        if (!rc && fail)
            rc = sl_err_set(err, SL_EIO, "writing '%s' failed: no space left on device "
                            "(test hook)", path);
        if (rc) sl_out_abort(&o);
        else rc = sl_out_commit(&o, err);
    }
    free(text);
    return rc;
}

/* ---- scores ------------------------------------------------------------- */

void sl_usage_add(sl_usage *u, int layer, int expert, double w)
{
    SL_ASSERT(layer >= 0 && layer < u->n_layer && expert >= 0 && expert < u->n_expert);
    u->score[(size_t)layer * (size_t)u->n_expert + (size_t)expert] += w;
}

double sl_usage_get(const sl_usage *u, int layer, int expert)
{
    SL_ASSERT(layer >= 0 && layer < u->n_layer && expert >= 0 && expert < u->n_expert);
    return u->score[(size_t)layer * (size_t)u->n_expert + (size_t)expert];
}

int sl_usage_n_layer(const sl_usage *u) { return u->n_layer; }
int sl_usage_n_expert(const sl_usage *u) { return u->n_expert; }

typedef struct ranked {
    double score;
    int key;
} ranked;

static int by_score(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

int sl_usage_top(const sl_usage *u, int max, int *layers, int *experts)
{
    const size_t total = (size_t)u->n_layer * (size_t)u->n_expert;
    ranked *r = malloc(sizeof *r * (total ? total : 1));
    if (!r || max <= 0) {
        free(r);
        return 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < total; i++)
        if (u->score[i] > 0) r[n++] = (ranked){u->score[i], (int)i};
    qsort(r, n, sizeof *r, by_score);
    const int k = n < (size_t)max ? (int)n : max;
    for (int i = 0; i < k; i++) {
        layers[i] = r[i].key / u->n_expert;
        experts[i] = r[i].key % u->n_expert;
    }
    free(r);
    return k;
}
