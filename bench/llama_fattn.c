/* llama_fattn.c - `llama_fattn [K_TYPE V_TYPE [N_KV [N_TOK]]]`: llama.cpp's
 * flash-attention op (ggml_flash_attn_ext on its CPU backend) against
 * sluice's attention over a cache of the same bytes, element by element.
 * Random queries, K and V rows; the cache rows quantised once by sluice's
 * row store (so both read identical bytes), the mask causal for N_TOK
 * tokens at the end of N_KV positions; the shape is small's (head 64, 8
 * query heads sharing 2 K/V heads). Prints the outputs that differ (first
 * few and a count) for each of a few seeds. Types: f32, f16, q8_0, q4_0.
 * FATTN_SEQ=1 compares sluice's one-chunk form for f16 / f32 caches too,
 * FATTN_THREADS=N runs llama.cpp's op on N threads (its default 4).
 * Built by bench/llama_ref.sh's recipe against node-llama-cpp's libraries
 * (LLAMA_CPU_BACKEND names the CPU backend to load). A developer tool: not
 * part of the library or the suite. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_rows.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ops/attn_kernels.h"
#include "quant/quant.h"

enum { DK = 64, H = 8, HKV = 2 };

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static int kv_of(const char *name, sl_kv_type *kv, enum ggml_type *gt, int *st)
{
    if (!strcmp(name, "f32")) *kv = SL_KV_F32, *gt = GGML_TYPE_F32, *st = SL_TYPE_F32;
    else if (!strcmp(name, "f16")) *kv = SL_KV_F16, *gt = GGML_TYPE_F16, *st = SL_TYPE_F16;
    else if (!strcmp(name, "q8_0")) *kv = SL_KV_Q8_0, *gt = GGML_TYPE_Q8_0, *st = SL_TYPE_Q8_0;
    else if (!strcmp(name, "q4_0")) *kv = SL_KV_Q4_0, *gt = GGML_TYPE_Q4_0, *st = SL_TYPE_Q4_0;
    else return -1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *kn = argc > 1 ? argv[1] : "q8_0", *vn = argc > 2 ? argv[2] : "q8_0";
    const int n_kv = argc > 3 ? atoi(argv[3]) : 256, n_tok = argc > 4 ? atoi(argv[4]) : 4;
    sl_kv_type kk, vk;
    enum ggml_type kg, vg;
    int ks, vs;
    if (kv_of(kn, &kk, &kg, &ks) || kv_of(vn, &vk, &vg, &vs) || n_kv < n_tok || n_tok < 1) {
        fprintf(stderr, "usage: llama_fattn [K_TYPE V_TYPE [N_KV [N_TOK]]]\n");
        return 2;
    }
    const char *backend = getenv("LLAMA_CPU_BACKEND");
    if (!backend || !ggml_backend_load(backend)) {
        fprintf(stderr, "llama_fattn: cannot load the CPU backend (set LLAMA_CPU_BACKEND)\n");
        return 1;
    }
    ggml_backend_t be = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (!be) return 1;
    if (getenv("FATTN_THREADS")) { /* a one-token decode over 512+ positions splits by threads */
        ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(be));
        ggml_backend_set_n_threads_t set_n =
            (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
        if (set_n) set_n(be, atoi(getenv("FATTN_THREADS")));
    }
    const size_t krb = sl_kv_row_bytes(kk, DK), vrb = sl_kv_row_bytes(vk, DK);
    const float scale = 1.0f / sqrtf((float)DK);
    long total_diff = 0;
    for (unsigned seed = 1; seed <= 4; seed++) {
        unsigned s = seed * 7919u;
        struct ggml_init_params ip = {.mem_size = 64u << 20, .mem_buffer = NULL, .no_alloc = false};
        struct ggml_context *ctx = ggml_init(ip);
        const int mask_rows = n_tok; /* no padding needed by this version */
        struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, DK, n_tok, H, 1);
        struct ggml_tensor *k = ggml_new_tensor_4d(ctx, kg, DK, n_kv, HKV, 1);
        struct ggml_tensor *v = ggml_new_tensor_4d(ctx, vg, DK, n_kv, HKV, 1);
        struct ggml_tensor *m = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, n_kv, mask_rows, 1, 1);
        float row[DK];
        /* q: [DK][n_tok][H] (ggml order: d fastest, then token, then head) */
        for (int h = 0; h < H; h++)
            for (int t = 0; t < n_tok; t++)
                for (int d = 0; d < DK; d++)
                    ((float *)q->data)[((size_t)h * n_tok + t) * DK + d] = 2.0f * frand(&s);
        for (int h = 0; h < HKV; h++)
            for (int p = 0; p < n_kv; p++) {
                for (int d = 0; d < DK; d++) row[d] = 1.5f * frand(&s);
                sl_kv_row_store(kk, row, (char *)k->data + ((size_t)h * n_kv + p) * krb, DK);
                for (int d = 0; d < DK; d++) row[d] = frand(&s);
                sl_kv_row_store(vk, row, (char *)v->data + ((size_t)h * n_kv + p) * vrb, DK);
            }
        /* causal: token t sits at position n_kv - n_tok + t */
        for (int t = 0; t < mask_rows; t++)
            for (int p = 0; p < n_kv; p++) {
                const int vis = t < n_tok && p <= n_kv - n_tok + t;
                ((ggml_fp16_t *)m->data)[(size_t)t * n_kv + p] = ggml_fp32_to_fp16(vis ? 0.0f : -INFINITY);
            }
        struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, m, scale, 0.0f, 0.0f);
        ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
        struct ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, out);
        if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) return 1;
        /* sluice: per token and K/V head, its group of H / HKV rows */
        const int group = H / HKV;
        size_t scratch_n = sl_attn_scratch_floats(DK, DK, group) + 4096;
        float *scratch = malloc(sizeof(float) * scratch_n), qg[H * DK], o[H * DK];
        int diff = 0;
        for (int t = 0; t < n_tok; t++) {
            for (int h = 0; h < H; h++)
                memcpy(qg + h * DK, (float *)q->data + ((size_t)h * n_tok + t) * DK, sizeof row);
            for (int g = 0; g < HKV; g++) {
                sl_attn_block b = {
                    .q = qg + g * group * DK, .q_stride = DK,
                    .k = (char *)k->data + (size_t)g * n_kv * krb, .k_stride = krb,
                    .v = (char *)v->data + (size_t)g * n_kv * vrb, .v_stride = vrb,
                    .dk = DK, .dv = DK, .n_q = group, .n_pos = n_kv - n_tok + t + 1,
                    .scale = scale, .out = o + g * group * DK, .out_stride = DK,
                    .scratch = scratch, .n_tok = 1};
                /* llama.cpp splits a one-token decode over a view of 512+ by threads */
                const int nth = getenv("FATTN_THREADS") ? atoi(getenv("FATTN_THREADS")) : 4;
                if (n_tok == 1 && n_kv >= 512 && ks == vs && (ks == SL_TYPE_F16 || ks == SL_TYPE_F32))
                    b.split_n = nth, b.split_len = (n_kv + nth - 1) / nth;
                /* the engine's choice: the tiled kernels for an f16 or f32 cache of
                 * one type (llama.cpp's tiled path, which it takes from 64 tokens on;
                 * below that it takes the one-chunk loop, and the bits part), else
                 * the position-by-position loop */
                if (ks == vs && (ks == SL_TYPE_F16 || ks == SL_TYPE_F32) && !getenv("FATTN_SEQ"))
                    sl_attn_attend_tokens(sl_attn_kernels_get(), &b, ks == SL_TYPE_F16);
                else
                    sl_attn_attend_seq(sl_attn_kernels_get(), &b, ks, vs);
            }
            if (getenv("FATTN_REIMPL") && ks == SL_TYPE_Q8_0 && vs == SL_TYPE_F32) {
                /* llama.cpp's one-chunk loop written out with its own quantiser and dot */
                static void (*lq)(const float *, void *, int64_t);
                static void (*ld)(int, float *, size_t, const void *, size_t, const void *, size_t, int);
                if (!lq) {
                    void *hd = dlopen(backend, RTLD_NOW);
                    lq = (void (*)(const float *, void *, int64_t))dlsym(hd, "quantize_row_q8_0");
                    ld = (void (*)(int, float *, size_t, const void *, size_t, const void *, size_t,
                                   int))dlsym(hd, "ggml_vec_dot_q8_0_q8_0");
                }
                for (int h = 0; h < H; h++) {
                    uint8_t qq[DK / 32 * 34];
                    if (getenv("FATTN_SLQ")) sl_type_get(SL_TYPE_Q8_0)->from_float(qg + h * DK, qq, DK);
                    else lq(qg + h * DK, qq, DK);
                    float M = -INFINITY, S = 0.0f, acc[DK] = {0};
                    const int g = h / group;
                    for (int p = 0; p < n_kv - n_tok + t + 1; p++) {
                        float sc;
                        if (getenv("FATTN_SLD"))
                            sl_type_get(SL_TYPE_Q8_0)->vec_dot(DK, &sc, (char *)k->data + ((size_t)g * n_kv + p) * krb, qq);
                        else
                            ld(DK, &sc, 0, (char *)k->data + ((size_t)g * n_kv + p) * krb, 0, qq, 0, 1);
                        sc = sc * scale;
                        const float Mold = M;
                        float ms = 1.0f, vv = 1.0f;
                        if (sc > M) {
                            M = sc;
                            ms = expf(Mold - M);
                            for (int d = 0; d < DK; d++) acc[d] *= ms;
                        } else {
                            vv = expf(sc - M);
                        }
                        const float *vr = (const float *)((char *)v->data + ((size_t)g * n_kv + p) * vrb);
                        for (int d = 0; d < DK; d++) acc[d] = fmaf(vr[d], vv, acc[d]);
                        S = getenv("FATTN_FMA") ? fmaf(S, ms, vv) : S * ms + vv;
                    }
                    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
                    int dl = 0, dsl = 0;
                    for (int d = 0; d < DK; d++) {
                        const float r = acc[d] * inv;
                        dl += memcmp(&r, (float *)out->data + ((size_t)t * H + h) * DK + d, 4) != 0;
                        dsl += memcmp(&r, &o[h * DK + d], 4) != 0;
                    }
                    if (dl || dsl) printf("  head %d: rewrite vs llama.cpp %d differ, vs sluice %d\n", h, dl, dsl);
                }
            }
            /* out: [DV][H][n_tok] */
            for (int h = 0; h < H; h++)
                for (int d = 0; d < DK; d++) {
                    const float want = ((float *)out->data)[((size_t)t * H + h) * DK + d];
                    const float got = o[h * DK + d];
                    if (memcmp(&want, &got, 4)) {
                        if (diff < 5)
                            printf("seed %u token %d head %d d %d: llama.cpp %.9g sluice %.9g\n", seed,
                                   t, h, d, (double)want, (double)got);
                        diff++;
                    }
                }
        }
        printf("seed %u: %d of %d outputs differ\n", seed, diff, n_tok * H * DK);
        total_diff += diff;
        free(scratch);
        ggml_free(ctx);
    }
    ggml_backend_free(be);
    return total_diff ? 1 : 0;
}
