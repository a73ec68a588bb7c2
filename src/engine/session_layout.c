/* session_layout.c - sizing a session's buffers (see session_layout.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/session_layout.h"
#include "engine/block.h"
#include "engine/fwd_mm.h"
#include "engine/kv_rows.h"
#include "engine/mixer.h"
#include "ops/attn_kernels.h"
#include "ops/ops.h"
#include "util/checked.h"

#if defined(__SANITIZE_ADDRESS__)
#define SL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SL_ASAN 1
#endif
#endif
#ifdef SL_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define GUARD_BYTE 0xA5

static const char *const buffer_names[SL_SB_COUNT] = {
#define SL_SBUF_NAME(name) #name,
    SL_SESSION_BUFFERS(SL_SBUF_NAME)
#undef SL_SBUF_NAME
};

const char *sl_session_buffer_name(sl_sbuf b)
{
    return b >= 0 && b < SL_SB_COUNT ? buffer_names[b] : "?";
}

/* Products of sizes, remembering whether any overflowed. */
typedef struct sizer {
    bool overflow;
} sizer;

static uint64_t mul(sizer *z, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (!sl_mul_u64(a, b, &r)) {
        z->overflow = true;
        return 0;
    }
    return r;
}

static uint64_t mul3(sizer *z, uint64_t a, uint64_t b, uint64_t c)
{
    return mul(z, mul(z, a, b), c);
}

static uint64_t umax(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Bytes of one input row prepared for tensor t (an absent tensor needs
 * none). Every matrix counts, whatever its number of rows: a matrix of
 * one output row reads a full input row like any other. */
static uint64_t prepared_row(const sl_tensor *t)
{
    return t->info ? sl_fwd_act_stride(t->type, (int64_t)t->ne[0]) : 0;
}

/* What the matrices need of the activation buffers they read: the block
 * input (the session's input sets), or SwiGLU rows prepared for a down
 * projection; and the widest row any of them dequantises. */
typedef struct act_needs {
    uint64_t in_row;     /* widest prepared block-input row */
    uint64_t down_tok;   /* prepared down-projection bytes per token */
    uint64_t widest_col; /* most columns of any matrix (dequantised fallback rows) */
    int sets;
} act_needs;

static void need_input(act_needs *an, const sl_tensor *t)
{
    an->in_row = umax(an->in_row, prepared_row(t));
    if (t->info) an->widest_col = umax(an->widest_col, t->ne[0]);
}

static void need_down(act_needs *an, const sl_tensor *t, uint64_t rows_per_tok, sizer *z)
{
    an->down_tok = umax(an->down_tok, mul(z, rows_per_tok, prepared_row(t)));
    if (t->info) an->widest_col = umax(an->widest_col, t->ne[0]);
}

static act_needs model_act_needs(const sl_model *m, uint64_t K, sizer *z)
{
    act_needs an = {64, 64, 1, 1};
    need_input(&an, &m->output);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer *L = &m->layers[il];
        for (int r = 0; r < SL_LT_COUNT; r++) {
            const sl_lt_role *role = sl_layer_role((sl_ltensor)r);
            if (role->reads == SL_READS_INPUT) need_input(&an, &L->t[r]);
            /* a token's K routed rows go down together */
            if (role->reads == SL_READS_FFN_ROWS) need_down(&an, &L->t[r], role->routed ? K : 1, z);
        }
        if (L->gate_exps.info && L->up_exps.info &&
            sl_matvec_act_type(L->gate_exps.type) != sl_matvec_act_type(L->up_exps.type))
            an.sets = 2;
    }
    return an;
}

size_t sl_kv_plain_elem(sl_kv_type tk) { return tk == SL_KV_F32 ? 4 : 2; }

void sl_session_layer_rows(const sl_model *m, int il, sl_kv_type tk, sl_kv_type tv,
                           uint64_t rows[2])
{
    const sl_layer_desc *d = &m->layers[il].d;
    const sl_mixer_ops *mx = sl_mixer_of(d->mixer);
    if (mx->cache != SL_CACHE_KV) {
        mx->state_rows(d, sl_kv_plain_elem(tk), rows);
        return;
    }
    uint64_t f32[2];
    mx->state_rows(d, 4, f32);
    rows[0] = sl_kv_row_bytes(tk, f32[0] / 4);
    rows[1] = sl_kv_row_bytes(tv, f32[1] / 4);
}

/* Whether layer d can cache K of type tk and V of type tv. */
static bool layer_fits(const sl_layer_desc *d, sl_kv_type tk, sl_kv_type tv)
{
    switch (sl_mixer_of(d->mixer)->cache) {
    case SL_CACHE_KV:
        return !(sl_kv_type_quantized(tk) && d->attn.head_dim % SL_KV_BLOCK) &&
               !(sl_kv_type_quantized(tv) && d->attn.head_dim_v % SL_KV_BLOCK);
    case SL_CACHE_K_PLAIN:
        return !sl_kv_type_quantized(tk);
    case SL_CACHE_NONE:
        break;
    }
    return true;
}

int sl_session_kv_misfit(const sl_model *m, sl_kv_type tk, sl_kv_type tv)
{
    for (int il = 0; il < m->hp.n_layer; il++)
        if (!layer_fits(&m->layers[il].d, tk, tv)) return il;
    return -1;
}

int sl_session_kv_check(const sl_model *m, sl_kv_type tk, sl_kv_type tv, sl_err *err)
{
    if (!sl_kv_type_ok((int)tk) || !sl_kv_type_ok((int)tv))
        return sl_err_set(err, SL_EINVAL, "unknown KV cache type (K %d, V %d)", (int)tk, (int)tv);
    const int il = sl_session_kv_misfit(m, tk, tv);
    if (il < 0) return SL_OK;
    const sl_layer_desc *d = &m->layers[il].d;
    const sl_mixer_ops *mx = sl_mixer_of(d->mixer);
    if (mx->cache == SL_CACHE_K_PLAIN)
        return sl_err_set(err, SL_EINVAL, "a %s K cache: layer %d (%s) keeps %s in the K cache, "
                          "as f16 or f32 only (sluice has no quantised kernels for it): use "
                          "f16 or f32 K for this model", sl_kv_type_name(tk), il, mx->name,
                          mx->cache_rows ? mx->cache_rows : "its rows");
    return sl_err_set(err, SL_EINVAL, "a %s K / %s V cache stores blocks of %d values per "
                      "head, and layer %d's heads have %d (K) and %d (V) values: use f16 or "
                      "f32 for this model", sl_kv_type_name(tk), sl_kv_type_name(tv),
                      SL_KV_BLOCK, il, d->attn.head_dim, d->attn.head_dim_v);
}

uint64_t sl_kv_ring_cap(int n_swa, int n_ctx, int n_batch)
{
    if (n_swa <= 0) return 0;
    const uint64_t cap = (uint64_t)n_swa + (uint64_t)n_batch - 1;
    return 2 * cap < (uint64_t)n_ctx ? cap : 0;
}

void sl_session_layer_kv(const sl_model *m, int il, const sl_session_dims *d, sl_layer_kv *out)
{
    const sl_layer_desc *ld = &m->layers[il].d;
    sl_session_layer_rows(m, il, d->type_k, d->type_v, out->row_bytes);
    const int n_swa = !d->swa_full && ld->mixer == SL_MIXER_ATTN ? ld->attn.n_swa : 0;
    out->ring_cap = sl_kv_ring_cap(n_swa, d->n_ctx, d->n_batch);
    out->n_rows = out->ring_cap ? 2 * out->ring_cap : (uint64_t)d->n_ctx;
}

/* Every layer's K (r = 0) and V (r = 1) stream bytes as sl_session_layer_kv
 * stores them; false on overflow. */
static bool kv_stream_bytes(const sl_model *m, const sl_session_dims *d, uint64_t out[2])
{
    bool ok = true;
    out[0] = out[1] = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        sl_layer_kv lk;
        sl_session_layer_kv(m, il, d, &lk);
        for (int r = 0; r < 2; r++) {
            uint64_t b;
            ok &= sl_mul_u64(lk.row_bytes[r], lk.n_rows, &b);
            ok &= sl_add_u64(out[r], b, &out[r]);
        }
    }
    return ok;
}

bool sl_session_kv_bytes_at(const sl_model *m, sl_kv_type tk, sl_kv_type tv, int n_ctx,
                            int n_batch, bool ring, uint64_t *bytes)
{
    const sl_session_dims d = {.n_batch = n_batch, .n_ctx = n_ctx, .n_threads = 1,
                               .n_logit_rows = 1, .type_k = tk, .type_v = tv,
                               .swa_full = !ring};
    uint64_t kv[2];
    const bool ok = kv_stream_bytes(m, &d, kv) && sl_add_u64(kv[0], kv[1], bytes);
    if (!ok) *bytes = 0;
    return ok;
}

bool sl_session_state_bytes(const sl_model *m, sl_kv_type tk, sl_kv_type tv,
                            uint64_t per_token[2], uint64_t *per_seq)
{
    bool ok = true;
    per_token[0] = per_token[1] = *per_seq = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer_desc *d = &m->layers[il].d;
        uint64_t rows[2];
        sl_session_layer_rows(m, il, tk, tv, rows);
        for (int r = 0; r < 2; r++) ok &= sl_add_u64(per_token[r], rows[r], &per_token[r]);
        ok &= sl_add_u64(*per_seq, sl_mixer_of(d->mixer)->state_seq(d), per_seq);
    }
    return ok;
}

uint64_t sl_model_kv_bytes_per_token(const sl_model *m, sl_kv_type type_k, sl_kv_type type_v)
{
    uint64_t rows[2], seq;
    if (!sl_kv_type_ok((int)type_k) || !sl_kv_type_ok((int)type_v) ||
        sl_session_kv_misfit(m, type_k, type_v) >= 0 ||
        !sl_session_state_bytes(m, type_k, type_v, rows, &seq))
        return 0;
    return rows[0] + rows[1];
}

/* The widest attention of any layer: the scratch of q, k, v and the
 * attention output is shared by all layers. */
typedef struct mixer_widths {
    uint64_t q, k, v, o;          /* attention: per token */
    uint64_t tile;                /* attention: floats of one thread's block scratch */
} mixer_widths;

static mixer_widths widest_mixers(const sl_model *m, sizer *z)
{
    mixer_widths w = {0};
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer_desc *d = &m->layers[il].d;
        if (d->mixer == SL_MIXER_GDN) continue; /* its scratch is its own */
        const sl_attn_desc *a = &d->attn;
        const uint64_t hq = mul(z, (uint64_t)a->n_head, (uint64_t)a->head_dim);
        w.q = umax(w.q, a->gated ? mul(z, 2, hq) : hq); /* gated: query and gate rows */
        w.o = umax(w.o, mul(z, (uint64_t)a->n_head, (uint64_t)a->head_dim_v));
        w.k = umax(w.k, mul(z, (uint64_t)a->n_head_kv, (uint64_t)a->head_dim));
        w.v = umax(w.v, mul(z, (uint64_t)a->n_head_kv, (uint64_t)a->head_dim_v));
        /* sl_attn_scratch_floats(head_dim, head_dim_v, group), checked */
        const uint64_t group = (uint64_t)(a->n_head / a->n_head_kv);
        const uint64_t tile = mul(z, SL_ATTN_TILE, (uint64_t)a->head_dim + (uint64_t)a->head_dim_v + 1);
        w.tile = umax(w.tile, tile + mul(z, group, (uint64_t)a->head_dim_v + 2));
        /* ... or the position-by-position form's, when larger */
        const uint64_t seq = mul(z, group, (uint64_t)a->head_dim + (uint64_t)a->head_dim_v + 2);
        w.tile = umax(w.tile, seq + (uint64_t)a->head_dim_v);
        /* ... and a prompt's query blocks (the formula's owner) */
        w.tile = umax(w.tile, sl_attn_scratch_floats(a->head_dim, a->head_dim_v, (int)group));
    }
    return w;
}

/* Floats of kind_scratch: the most any layer's mixer or the model's layer
 * kind declares for micro-batches of B. */
static uint64_t kind_scratch_floats(const sl_model *m, uint64_t B, sizer *z)
{
    uint64_t most = 0, f = 0;
    const sl_block_ops *block = sl_block_stream(m);
    if (block->scratch_floats && !block->scratch_floats(m, B, &f)) z->overflow = true;
    most = umax(most, f);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer_desc *d = &m->layers[il].d;
        const sl_mixer_ops *mx = sl_mixer_of(d->mixer);
        f = 0;
        if (mx->scratch_floats && !mx->scratch_floats(m, d, B, &f)) z->overflow = true;
        most = umax(most, f);
    }
    return most;
}

int sl_session_layout_make(sl_session_layout *lay, const sl_model *m, const sl_session_dims *d,
                           sl_err *err)
{
    memset(lay, 0, sizeof *lay);
    const sl_hparams *hp = &m->hp;
    if (d->n_batch < 1 || d->n_ctx < 1 || d->n_threads < 1 || d->n_logit_rows < 1 ||
        d->n_logit_rows > d->n_batch)
        return sl_err_set(err, SL_EINVAL, "session dimensions out of range (batch %d, context "
                          "%d, threads %d, logit rows %d)", d->n_batch, d->n_ctx, d->n_threads,
                          d->n_logit_rows);
    const int rc = sl_session_kv_check(m, d->type_k, d->type_v, err);
    if (rc) return rc;
    sizer z = {false};
    const uint64_t B = (uint64_t)d->n_batch;
    const uint64_t T = (uint64_t)d->n_threads, layers = (uint64_t)hp->n_layer;
    const uint64_t E = (uint64_t)hp->n_embd, V = (uint64_t)hp->n_vocab;
    const uint64_t X = umax((uint64_t)hp->n_expert, 1), K = umax((uint64_t)hp->n_expert_used, 1);
    const mixer_widths aw = widest_mixers(m, &z);
    /* SwiGLU floats per token: a dense or shared FFN's width, or K expert
     * widths (all of a layer's (token, rank) rows are computed at once) */
    const uint64_t ff = umax(umax((uint64_t)hp->n_ff, (uint64_t)hp->n_ff_shexp),
                             mul(&z, K, (uint64_t)hp->n_ff_exp));
    const act_needs an = model_act_needs(m, K, &z);
    uint64_t state_tok[2], state_seq; /* every layer's state: per position, per sequence */
    if (!sl_session_state_bytes(m, d->type_k, d->type_v, state_tok, &state_seq))
        z.overflow = true;
    const uint64_t mm_cap = 2 * X + 4;
    const uint64_t f = sizeof(float), i = sizeof(int), p = sizeof(void *);
    const uint64_t BK = mul(&z, B, K);

    uint64_t *n = lay->bytes;
    uint64_t kv[2]; /* every layer's K and V streams, rings counted as stored */
    if (!kv_stream_bytes(m, d, kv)) z.overflow = true;
    n[SL_SB_k_cache] = kv[0];
    n[SL_SB_v_cache] = kv[1];
    n[SL_SB_x] = n[SL_SB_xb] = n[SL_SB_ffn_out] = n[SL_SB_tmp] = mul3(&z, f, B, E);
    n[SL_SB_q] = mul3(&z, f, B, aw.q);
    n[SL_SB_k] = mul3(&z, f, B, aw.k);
    n[SL_SB_v] = mul3(&z, f, B, aw.v);
    n[SL_SB_attn_out] = mul3(&z, f, B, aw.o);
    n[SL_SB_hb] = n[SL_SB_hb2] = mul3(&z, f, B, ff);
    n[SL_SB_att] = mul3(&z, f, T, aw.tile);
    n[SL_SB_router] = mul3(&z, f, B, X);
    n[SL_SB_topk_ids] = mul(&z, i, BK);
    n[SL_SB_topk_w] = mul(&z, f, BK);
    n[SL_SB_exp_out] = hp->n_expert ? mul3(&z, f, BK, E) : 0;
    n[SL_SB_moe_count] = i * (X + 1);
    n[SL_SB_moe_cursor] = i * X;
    n[SL_SB_moe_slot] = n[SL_SB_moe_pos] = n[SL_SB_moe_rows] = mul(&z, i, BK);
    n[SL_SB_moe_xw] = sizeof(sl_expert_w) * X;
    n[SL_SB_pf_x] = f * E;
    n[SL_SB_pf_logits] = f * X;
    n[SL_SB_pf_w] = f * K;
    n[SL_SB_pf_ids] = i * K;
    n[SL_SB_moe_acts_g] = n[SL_SB_moe_acts_u] = n[SL_SB_down_acts] = mul(&z, p, BK);
    n[SL_SB_act_down] = mul(&z, B, an.down_tok);
    n[SL_SB_acts] = mul3(&z, p, (uint64_t)an.sets, B);
    n[SL_SB_act] = mul3(&z, (uint64_t)an.sets, B, an.in_row);
    n[SL_SB_mm_items] = sizeof(sl_mm_item) * mm_cap;
    n[SL_SB_mm_c0] = i * (mm_cap + 1);
    n[SL_SB_row_tmp] = mul3(&z, f, T, an.widest_col);
    n[SL_SB_logits] = mul3(&z, f, (uint64_t)d->n_logit_rows, V);
    n[SL_SB_layer_state] = sizeof(sl_layer_state) * layers;
    n[SL_SB_seq_state] = n[SL_SB_seq_snap] = state_seq; /* the state, and a snapshot of it */
    n[SL_SB_kind_scratch] = mul(&z, f, kind_scratch_floats(m, B, &z));

    uint64_t off = 0;
    for (int b = 0; b < SL_SB_COUNT && !z.overflow; b++) {
        lay->offset[b] = off;
        uint64_t end;
        if (!sl_add_u64(off, n[b], &end) || !sl_add_u64(end, SL_SESSION_GUARD, &end) ||
            !sl_align_up_u64(end, SL_SESSION_GUARD, &off))
            z.overflow = true;
    }
    /* the forward pass indexes (token, rank) rows and (token, head) pairs
     * with ints */
    if (z.overflow || off > SIZE_MAX - SL_SESSION_GUARD || BK > INT_MAX ||
        B * (uint64_t)hp->n_head > INT_MAX)
        return sl_err_set(err, SL_ENOMEM, "a session of this model (%d layers, embedding %d, "
                          "%d heads, %d experts of width %d, top-%d, vocabulary %d) with a "
                          "context of %d and batches of %d tokens does not fit in memory",
                          hp->n_layer, hp->n_embd, hp->n_head, hp->n_expert, hp->n_ff_exp,
                          hp->n_expert_used, hp->n_vocab, d->n_ctx, d->n_batch);
    lay->arena_bytes = off;
    lay->kv_bytes = n[SL_SB_k_cache] + n[SL_SB_v_cache];
    lay->scratch_bytes = off - lay->kv_bytes;
    lay->kv_elem = sl_kv_plain_elem(d->type_k);
    lay->act_stride = (size_t)an.in_row;
    lay->act_sets = an.sets;
    lay->mm_cap = (int)mm_cap;
    lay->row_tmp_stride = (size_t)an.widest_col;
    lay->att_floats = (size_t)aw.tile;
    return SL_OK;
}

/* The guard after buffer b: from its end to the next buffer's start. */
static void guard_span(const sl_session_layout *lay, int b, uint64_t *lo, uint64_t *len)
{
    *lo = lay->offset[b] + lay->bytes[b];
    const uint64_t hi = b + 1 < SL_SB_COUNT ? lay->offset[b + 1] : lay->arena_bytes;
    *len = hi - *lo;
}

void sl_session_guards_arm(const sl_session_layout *lay, uint8_t *arena)
{
    for (int b = 0; b < SL_SB_COUNT; b++) {
        uint64_t lo, len;
        guard_span(lay, b, &lo, &len);
        memset(arena + lo, GUARD_BYTE, (size_t)len);
#ifdef SL_ASAN
        ASAN_POISON_MEMORY_REGION(arena + lo, (size_t)len);
#endif
    }
}

sl_sbuf sl_session_guards_check(const sl_session_layout *lay, const uint8_t *arena)
{
#ifdef SL_ASAN
    (void)lay;
    (void)arena;
    return SL_SB_COUNT; /* poisoned: ASan reports the write itself */
#else
    for (int b = 0; b < SL_SB_COUNT; b++) {
        uint64_t lo, len;
        guard_span(lay, b, &lo, &len);
        for (uint64_t k = 0; k < len; k++)
            if (arena[lo + k] != GUARD_BYTE) return (sl_sbuf)b;
    }
    return SL_SB_COUNT;
#endif
}

void sl_session_guards_verify(const sl_session_layout *lay, const uint8_t *arena)
{
    const sl_sbuf b = sl_session_guards_check(lay, arena);
    if (b == SL_SB_COUNT) return;
    fprintf(stderr, "sluice: internal error: session buffer '%s' was written past its %llu "
            "bytes (a sizing mistake in session_layout.c)\n", sl_session_buffer_name(b),
            (unsigned long long)lay->bytes[b]);
    abort();
}

void sl_session_guards_disarm(const sl_session_layout *lay, uint8_t *arena)
{
#ifdef SL_ASAN
    for (int b = 0; b < SL_SB_COUNT; b++) {
        uint64_t lo, len;
        guard_span(lay, b, &lo, &len);
        ASAN_UNPOISON_MEMORY_REGION(arena + lo, (size_t)len);
    }
#else
    (void)lay;
    (void)arena;
#endif
}
