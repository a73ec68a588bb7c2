/* testutil.c - see testutil.h. */
#include "common/testutil.h"
#include "synth/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

const char *t_tmpdir(void)
{
    if (dir[0]) return dir;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sluice-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    return dir;
}

char *t_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", t_tmpdir(), name);
    return buf;
}

int t_write_synth_ds(const sl_synth_ds *c, const char *name, char *path, size_t cap)
{
    sl_err err;
    char file[96];
    snprintf(file, sizeof file, "%s.gguf", name);
    t_path(path, cap, file);
    if (sl_synth_ds_validate(c, &err) || sl_synth_ds_write(c, path, NULL, &err)) {
        fprintf(stderr, "  %s: %s\n", name, err.msg);
        return -1;
    }
    return 0;
}

sl_model *t_load_tiny(const char *arch, const char *file, bool q8)
{
    char path[512];
    sl_synth_config c;
    sl_err err;
    t_path(path, sizeof path, file);
    if (sl_synth_config_init(&c, arch, "tiny", &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", arch, err.msg);
        return NULL;
    }
    if (q8) {
        c.type = SL_SYNTH_Q8_0;
        c.seed = 2;
    }
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", arch, err.msg);
        return NULL;
    }
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 1;
    sl_model *m = NULL;
    if (sl_model_load(&m, path, &mp, &err)) fprintf(stderr, "  load: %s\n", err.msg);
    return m;
}

sl_model *t_load_resident(const char *path, int n_threads)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = n_threads;
    mp.stream = SL_STREAM_OFF;
    sl_model *m = NULL;
    sl_err err = {0};
    if (sl_model_load(&m, path, &mp, &err)) fprintf(stderr, "  load %s: %s\n", path, err.msg);
    return m;
}

char *t_fixture(char *buf, size_t cap, const char *name)
{
    static const char *const dirs[] = {"../shared/fixtures/reference",
                                       "/work/shared/fixtures/reference"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(buf, cap, "%s/%s", dirs[i], name);
        if (access(buf, R_OK) == 0) return buf;
    }
    return NULL;
}

double t_rel_rms(const float *x, const float *y, int n)
{
    double se = 0, sx = 0;
    for (int i = 0; i < n; i++) {
        se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        sx += (double)x[i] * x[i];
    }
    return sx > 0 ? sqrt(se / sx) : sqrt(se);
}

float *t_session_logits(sl_model *m, const sl_session_params *sp, const int32_t *ids, int n_tok,
                        int batch, int n_prompt)
{
    sl_session *s;
    sl_err err;
    if (sl_session_create(&s, m, sp, &err)) {
        fprintf(stderr, "  session: %s\n", err.msg);
        return NULL;
    }
    if (n_prompt >= 0) sl_session_set_prompt(s, n_prompt);
    const size_t V = (size_t)sl_model_n_vocab(m);
    float *out = malloc(V * (size_t)n_tok * sizeof *out);
    for (int i = 0; out && i < n_tok; i += batch) {
        const int n = n_tok - i < batch ? n_tok - i : batch;
        if (sl_session_eval(s, ids + i, n, &err)) {
            fprintf(stderr, "  eval: %s\n", err.msg);
            free(out);
            out = NULL;
            break;
        }
        for (int j = 0; j < n; j++)
            memcpy(out + (size_t)(i + j) * V, sl_session_logits_at(s, j), V * sizeof *out);
    }
    sl_session_free(s);
    return out;
}

float *t_batched_logits(const t_logits_run *r)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = r->threads;
    if (r->cache_experts > 0) {
        mp.stream = SL_STREAM_ON;
        mp.cache_experts = r->cache_experts;
    }
    sl_model *m;
    sl_err err;
    if (sl_model_load(&m, r->path, &mp, &err)) {
        fprintf(stderr, "  load: %s\n", err.msg);
        return NULL;
    }
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = r->n_ctx > 0 ? r->n_ctx : 64;
    sp.n_batch_max = r->batch;
    sp.all_logits = true;
    sp.type_k = sp.type_v = (int)r->kv;
    float *out = t_session_logits(m, &sp, r->ids, r->n_tok, r->batch, -1);
    sl_model_free(m);
    return out;
}

char *t_read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 4096 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        const size_t r = fread(buf + n, 1, cap - n - 1, f);
        if (r == 0) break;
        n += r;
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    *len = n;
    return buf;
}
