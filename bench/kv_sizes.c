/* bench/kv_sizes.c - KV cache bytes with and without the sliding-window
 * ring, from the sizing function sessions and the memory plan use
 * (sl_session_kv_bytes_at, engine/session_layout.c).
 *
 *   kv_sizes [-b N_BATCH] [FILE.gguf ...]
 *
 * Prints, for micro-batches of N_BATCH (default 512, the sessions' default)
 * and f16 K/V, the bytes at -c 4096, 32768 and 131072 of the published
 * attention shapes of gpt-oss-20b, gpt-oss-120b and Gemma-4-26B-A4B (built
 * here as layer descriptions: nothing is read), then of each FILE (loaded
 * to be described: only its header). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_rows.h"
#include "engine/session_layout.h"
#include "model/model.h"
#include "sluice.h"

#define MIB (1024.0 * 1024.0)

/* A model of n_layer attention layers: sliding ones of kv_swa heads of
 * hd_swa with window n_swa, the others of kv_full heads of hd_full; layer
 * l slides iff slides(l, period). */
typedef struct shape {
    const char *name;
    int n_layer, kv_swa, hd_swa, n_swa, kv_full, hd_full, period;
} shape;

/* gpt-oss: every other layer slides (l % 2 == 0); gemma4: 5 of every 6 */
static int slides(const shape *s, int l)
{
    return s->period == 2 ? l % 2 == 0 : (l + 1) % s->period != 0;
}

static sl_model *build(const shape *s)
{
    sl_model *m = calloc(1, sizeof *m);
    m->layers = calloc((size_t)s->n_layer, sizeof *m->layers);
    m->hp.n_layer = s->n_layer;
    for (int l = 0; l < s->n_layer; l++) {
        const int sw = slides(s, l);
        const int kv = sw ? s->kv_swa : s->kv_full, hd = sw ? s->hd_swa : s->hd_full;
        m->layers[l].d.mixer = SL_MIXER_ATTN;
        m->layers[l].d.attn = (sl_attn_desc){.n_head = kv, .n_head_kv = kv, .head_dim = hd,
                                             .head_dim_v = hd, .n_swa = sw ? s->n_swa : 0};
    }
    return m;
}

static void row(const char *name, const sl_model *m, int n_batch)
{
    static const int ctx[] = {4096, 32768, 131072};
    for (size_t i = 0; i < sizeof ctx / sizeof ctx[0]; i++) {
        uint64_t full = 0, ring = 0;
        if (!sl_session_kv_bytes_at(m, SL_KV_F16, SL_KV_F16, ctx[i], n_batch, false, &full) ||
            !sl_session_kv_bytes_at(m, SL_KV_F16, SL_KV_F16, ctx[i], n_batch, true, &ring)) {
            printf("| %s | %d | overflow | |\n", name, ctx[i]);
            continue;
        }
        printf("| %s | %d | %.1f MiB | %.1f MiB | %.2fx |\n", name, ctx[i], (double)full / MIB,
               (double)ring / MIB, ring ? (double)full / (double)ring : 0.0);
    }
}

int main(int argc, char **argv)
{
    int n_batch = 512, a = 1;
    if (argc > 2 && !strcmp(argv[1], "-b")) {
        n_batch = atoi(argv[2]);
        a = 3;
    }
    if (n_batch < 1) {
        fprintf(stderr, "kv_sizes: -b needs a batch >= 1\n");
        return 2;
    }
    static const shape shapes[] = {
        /* name            layers kv_swa hd_swa window kv_full hd_full period */
        {"gpt-oss-20b",     24,   8,     64,    128,   8,      64,     2},
        {"gpt-oss-120b",    36,   8,     64,    128,   8,      64,     2},
        {"gemma4-26B-A4B",  30,   8,     256,   1024,  2,      512,    6},
    };
    printf("micro-batch %d, f16 K and V\n\n| model | -c | every position | with the ring | "
           "saved |\n|---|---:|---:|---:|---:|\n", n_batch);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        sl_model *m = build(&shapes[i]);
        row(shapes[i].name, m, n_batch);
        free(m->layers);
        free(m);
    }
    for (; a < argc; a++) {
        sl_model_params mp = sl_model_default_params();
        mp.describe_only = true;
        sl_model *m = NULL;
        sl_err err;
        if (sl_model_load(&m, argv[a], &mp, &err)) {
            fprintf(stderr, "kv_sizes: %s\n", err.msg);
            return 1;
        }
        const char *base = strrchr(argv[a], '/');
        row(base ? base + 1 : argv[a], m, n_batch);
        sl_model_free(m);
    }
    return 0;
}
