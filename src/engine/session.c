/* session.c - creating a session (KV cache, scratch; the model's pool) and evaluating
 * batches of tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/session.h"
#include "engine/model_runtime.h"
#include "util/mem.h"
#include "engine/fwd_mm.h"

sl_session_params sl_session_default_params(void)
{
    sl_session_params p = {.n_ctx = 0, .all_logits = false, .n_batch_max = 0, .type_k = -1,
                           .type_v = -1};
    return p;
}

/* Rows of logits a session of params p keeps without all_logits. */
static int logit_rows(const sl_session_params *p)
{
    if (p->n_logit_rows <= 1) return 1;
    return p->n_logit_rows < p->n_batch_max ? p->n_logit_rows : p->n_batch_max;
}

/* The dimensions a session of params p is laid out for. */
static sl_session_dims session_dims(const sl_model *m, const sl_session_params *p, int nth)
{
    sl_session_dims d = {.n_batch = p->n_batch_max, .n_ctx = p->n_ctx, .n_threads = nth,
                         .n_logit_rows = p->all_logits ? p->n_batch_max : logit_rows(p),
                         /* not chosen: the load's (sl_model_params.cache_type_k/v) */
                         .type_k = p->type_k >= 0 ? (sl_kv_type)p->type_k : m->rt->cache_type_k,
                         .type_v = p->type_v >= 0 ? (sl_kv_type)p->type_v : m->rt->cache_type_v,
                         .swa_full = p->swa_full || m->rt->swa_full};
    return d;
}

/* The product forms any of m's matrices heeds (ops.h SL_MM_FORM_*, as
 * ops/matmul.c): TAIL for a 2-d Q4_K of rows % 8 == 0, ONE for an F32 /
 * F16 / BF16 whose 2-d slices tinyBLAS takes and for an IQ4_NL it does. The row kinds keep only
 * those, so a row evaluated for one prompt is kept for another whenever
 * its products have the same bits either way. */
static int mm_heed(const sl_model *m)
{
    int h = 0;
    for (uint64_t i = 0; i < sl_gguf_tensor_count(m->gguf); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(m->gguf, i);
        const bool fp = t->type == SL_TYPE_F32 || t->type == SL_TYPE_F16 ||
                        t->type == SL_TYPE_BF16;
        if (t->n_dims == 2 && t->type == SL_TYPE_Q4_K && t->ne[1] % 8 == 0) h |= SL_MM_FORM_TAIL;
        if (t->n_dims >= 2 && fp && t->ne[1] % 4 == 0 && t->ne[0] % 8 == 0) h |= SL_MM_FORM_ONE;
        /* IQ4_NL through tinyBLAS: a 3-d weight (or experts: harmless) or rows % 8 != 0 */
        if (t->type == SL_TYPE_IQ4_NL && (t->n_dims >= 3 || t->ne[1] % 8 != 0))
            h |= SL_MM_FORM_ONE;
    }
    return h;
}

int sl_session_create(sl_session **out, sl_model *m, const sl_session_params *pp,
                      sl_err *err)
{
    *out = NULL;
    sl_session_params p = pp ? *pp : sl_session_default_params();
    const sl_hparams *hp = &m->hp;
    if (p.n_ctx <= 0) p.n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (p.n_ctx > SL_SESSION_MAX_CTX)
        return sl_err_set(err, SL_EINVAL, "context size %d is too large (at most %d)", p.n_ctx,
                          SL_SESSION_MAX_CTX);
    if (m->described_only)
        return sl_err_set(err, SL_EINVAL, "the model was loaded to be described, not to run");
    if (p.n_batch_max <= 0) p.n_batch_max = 512;
    if (p.n_batch_max > SL_SESSION_MAX_BATCH)
        return sl_err_set(err, SL_EINVAL, "batch size %d is too large (at most %d)",
                          p.n_batch_max, SL_SESSION_MAX_BATCH);

    const int nth = sl_pool_size(m->rt->pool); /* per-thread scratch for the model's pool */
    const sl_session_dims dims = session_dims(m, &p, nth);
    sl_session_layout lay;
    int rc = sl_session_layout_make(&lay, m, &dims, err);
    if (rc) return rc;

    sl_session *s = calloc(1, sizeof *s);
    if (!s) return sl_err_set(err, SL_ENOMEM, "out of memory");
    s->m = m;
    s->n_ctx = p.n_ctx;
    s->n_batch_max = p.n_batch_max;
    s->type_k = dims.type_k;
    s->type_v = dims.type_v;
    s->attn_rot = !p.attn_rot_off;
    s->decode_split = p.decode_split > 1 ? p.decode_split : 1;
    s->all_logits = p.all_logits;
    s->n_logit_rows = dims.n_logit_rows;
    s->route_step = -1;
    s->layout = lay;
    s->kv_elem = lay.kv_elem;

    s->attn_k = sl_attn_kernels_get();

    /* calloc: large arenas come zeroed from the OS, untouched until used,
     * so a long context's KV cache costs memory only as it fills */
    s->arena_mem = calloc(1, (size_t)lay.arena_bytes + SL_SESSION_GUARD);
    if (!s->arena_mem) {
        free(s);
        return sl_err_set(err, SL_ENOMEM, "cannot allocate the session: %.1f MiB (context %d "
                          "tokens, KV cache %.1f MiB)", (double)lay.arena_bytes / (1 << 20),
                          p.n_ctx, (double)lay.kv_bytes / (1 << 20));
    }
    s->arena = (uint8_t *)(((uintptr_t)s->arena_mem + SL_SESSION_GUARD - 1) &
                           ~(uintptr_t)(SL_SESSION_GUARD - 1));
    /* huge pages: a decode step streams every K/V head's rows, and on
     * small pages their TLB misses cost more than the reads (docs/perf-log.md,
     * session 8: decode at depth 4096 ~1.2x faster); the cache still fills
     * as it goes, 2 MiB of each head's rows at a time */
    sl_mem_advise_huge(s->arena_mem, (size_t)lay.arena_bytes + SL_SESSION_GUARD);
#define SL_SBUF_PLACE(name) s->name = (void *)(s->arena + lay.offset[SL_SB_##name]);
    SL_SESSION_BUFFERS(SL_SBUF_PLACE)
#undef SL_SBUF_PLACE
    sl_session_guards_arm(&lay, s->arena);
    uint8_t *rows[2] = {s->k_cache, s->v_cache};
    float *seq = s->seq_state;
    for (int il = 0; il < hp->n_layer; il++) {
        const sl_layer_desc *d = &m->layers[il].d;
        s->layer_state[il].seq = seq;
        s->layer_state[il].seq_bytes = (size_t)sl_mixer_of(d->mixer)->state_seq(d);
        seq += s->layer_state[il].seq_bytes / sizeof(float);
        sl_layer_kv lk; /* as the layout counted it */
        sl_session_layer_kv(m, il, &dims, &lk);
        s->layer_state[il].ring_cap = (int)lk.ring_cap;
        s->layer_state[il].ring_lo = 0;
        s->layer_state[il].n_slots = (size_t)lk.n_rows;
        const sl_mixer_ops *mo = sl_mixer_of(d->mixer);
        for (int r = 0; r < 2; r++) {
            /* a mixer's heads split its rows evenly (attention: n_head_kv
             * heads of equal size, whole blocks each) */
            s->layer_state[il].heads[r] = mo->state_heads ? mo->state_heads(d, r) : 1;
            s->layer_state[il].rows[r] = rows[r];
            s->layer_state[il].row_bytes[r] = (size_t)lk.row_bytes[r];
            rows[r] += (size_t)lk.row_bytes[r] * (size_t)lk.n_rows;
        }
    }
    s->act_stride = lay.act_stride;
    s->mm_cap = lay.mm_cap;
    s->row_tmp_stride = lay.row_tmp_stride;
    s->scratch_bytes = lay.scratch_bytes;

    s->snap_pos = -1;
    s->prompt_n = -1;
    s->row_kind = calloc((size_t)p.n_ctx + (size_t)s->n_batch_max, 1);
    if (!s->row_kind) {
        sl_session_free(s);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    s->form_buf = s->row_kind + p.n_ctx;
    s->mm_heed = mm_heed(m);
    s->pool = m->rt->pool;
    *out = s;
    return SL_OK;
}

void sl_session_free(sl_session *s)
{
    if (!s) return;
    if (s->arena) sl_session_guards_disarm(&s->layout, s->arena);
    free(s->spec);
    free(s->arena_mem);
    free(s->row_kind);
    free(s);
}

int sl_session_eval(sl_session *s, const int32_t *tokens, int n, sl_err *err)
{
    if (n <= 0) return sl_err_set(err, SL_EINVAL, "empty batch");
    if (n > s->n_batch_max)
        return sl_err_set(err, SL_EINVAL, "batch of %d tokens exceeds the session's maximum %d",
                          n, s->n_batch_max);
    if (s->n_past + n > s->n_ctx)
        return sl_err_set(err, SL_EINVAL, "context is full: %d tokens cached + %d new > %d "
                          "(use a larger -c)", s->n_past, n, s->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->m->hp.n_vocab)
            return sl_err_set(err, SL_EINVAL, "token id %d at batch position %d is outside "
                              "the vocabulary [0, %d)", tokens[i], i, s->m->hp.n_vocab);
    sl_session_batch_begin(s, n);
    const int rc = sl_forward_batch(s, tokens, n, err);
    sl_session_guards_verify(&s->layout, s->arena);
    sl_session_batch_end(s, n, rc);
    return rc;
}

int sl_session_row_kind(const sl_session *s, int n_prompt, int pos)
{
    if (n_prompt < 0) return SL_ROW_TILED;
    int size = 1; /* generated: decoded one token at a time */
    if (pos < n_prompt) {
        const int from = pos / SL_LLAMA_UBATCH * SL_LLAMA_UBATCH;
        size = n_prompt - from < SL_LLAMA_UBATCH ? n_prompt - from : SL_LLAMA_UBATCH;
    }
    const int mm = sl_session_mm_form(s, size, pos < n_prompt ? pos % SL_LLAMA_UBATCH : 0);
    if (size >= SL_ATTN_QTILE) return SL_ROW_TILED | mm;
    return (size == 1 && s->decode_split > 1 ? SL_ROW_LONE : SL_ROW_SEQ) | mm;
}

int sl_session_mm_form(const sl_session *s, int size, int in)
{
    return ((size == 1 ? SL_MM_FORM_ONE : 0) | (in >= size - size % 4 ? SL_MM_FORM_TAIL : 0)) &
           s->mm_heed;
}

int sl_session_set_prompt(sl_session *s, int n_prompt)
{
    s->prompt_n = n_prompt < 0 ? -1 : n_prompt;
    int k = 0;
    while (k < s->n_past && s->row_kind[k] == sl_session_row_kind(s, s->prompt_n, k)) k++;
    return k;
}

void sl_session_batch_begin(sl_session *s, int n)
{
    for (int i = 0; i < n && s->n_past + i < s->n_ctx; i++)
        s->row_kind[s->n_past + i] = (uint8_t)sl_session_row_kind(s, s->prompt_n, s->n_past + i);
    s->mm_form = s->row_kind + s->n_past;
    s->mm_form_n = s->n_past + n <= s->n_ctx ? n : 0;
    s->n_logits = 0;
    if (s->n_past == 0) { /* a new sequence: recurrent states start from zero */
        memset(s->seq_state, 0, (size_t)s->layout.bytes[SL_SB_seq_state]);
        for (int il = 0; il < s->m->hp.n_layer; il++) s->layer_state[il].ring_lo = 0;
    }
}

void sl_session_batch_end(sl_session *s, int n, int rc)
{
    /* a ring's appended rows replaced those ring_cap positions earlier
     * (also when the batch failed after appending) */
    for (int il = 0; il < s->m->hp.n_layer; il++) {
        sl_layer_state *st = &s->layer_state[il];
        const int lo = s->n_past + n - st->ring_cap;
        if (st->ring_cap > 0 && lo > st->ring_lo) st->ring_lo = lo;
    }
    if (rc) return;
    s->n_past += n;
    /* a prompt (more than one token): remember where it ended, so a chat
     * turn or a reused prefix can come back to it */
    const size_t seq = (size_t)s->layout.bytes[SL_SB_seq_state];
    if (n > 1 && seq > 0) {
        memcpy(s->seq_snap, s->seq_state, seq);
        s->snap_pos = s->n_past;
    }
}

const float *sl_session_logits(const sl_session *s)
{
    if (s->n_logits == 0) return NULL;
    return s->logits + (size_t)(s->n_logits - 1) * (size_t)s->m->hp.n_vocab;
}

const float *sl_session_logits_at(const sl_session *s, int i)
{
    if (s->all_logits) i -= s->logits_row0;
    if (i < 0 || i >= s->n_logits) return NULL;
    return s->logits + (size_t)i * (size_t)s->m->hp.n_vocab;
}

int sl_session_set_outputs_from(sl_session *s, int pos, sl_err *err)
{
    if (!s->all_logits)
        return sl_err_set(err, SL_EINVAL, "only a session with all_logits chooses the rows "
                          "whose logits it keeps");
    if (pos < 0) return sl_err_set(err, SL_EINVAL, "output position %d is negative", pos);
    s->out_from = pos;
    return SL_OK;
}

int sl_session_n_past(const sl_session *s) { return s->n_past; }
int sl_session_n_ctx(const sl_session *s) { return s->n_ctx; }

void sl_session_kv_types(const sl_session *s, sl_kv_type *type_k, sl_kv_type *type_v)
{
    *type_k = s->type_k;
    *type_v = s->type_v;
}

const char *sl_session_cache_text(const sl_session *s, char *buf, size_t cap)
{
    if (cap == 0) return buf;
    buf[0] = '\0';
    bool seen[SL_MIXER_COUNT] = {false};
    size_t len = 0;
    for (int il = 0; il < s->m->hp.n_layer && len < cap; il++) {
        const sl_mixer_kind k = s->m->layers[il].d.mixer;
        const sl_mixer_ops *mx = sl_mixer_of(k);
        if (seen[k] || mx->cache == SL_CACHE_NONE) continue;
        seen[k] = true;
        const char *sep = len ? "; " : "";
        int w = mx->cache == SL_CACHE_KV
                    ? snprintf(buf + len, cap - len, "%s%s K %s, V %s", sep, mx->name,
                               sl_kv_type_name(s->type_k), sl_kv_type_name(s->type_v))
                    : snprintf(buf + len, cap - len, "%s%s K %s", sep, mx->name,
                               sl_kv_type_name(s->type_k));
        if (w < 0) break;
        len += (size_t)w;
    }
    if (len == 0) snprintf(buf, cap, "none");
    return buf;
}

int sl_session_truncate_floor(const sl_session *s)
{
    int floor = 0;
    for (int il = 0; il < s->m->hp.n_layer; il++) {
        const sl_layer_desc *d = &s->m->layers[il].d;
        const sl_mixer_ops *mx = sl_mixer_of(d->mixer);
        const int f = mx->truncate_floor ? mx->truncate_floor(d, &s->layer_state[il]) : 0;
        if (f > floor) floor = f;
    }
    return floor < s->n_past ? floor : s->n_past;
}

int sl_session_truncate_err(sl_session *s, int n, sl_err *err)
{
    if (n < 0 || n >= s->n_past) return SL_OK;
    bool recurrent = false;
    for (int il = 0; il < s->m->hp.n_layer; il++)
        if (!sl_mixer_of(s->m->layers[il].d.mixer)->truncatable) recurrent = true;
    const int floor = sl_session_truncate_floor(s);
    if (n > 0 && n < floor)
        return sl_err_set(err, SL_EINVAL, "cannot go back to position %d of %d: the "
                          "sliding-window layers keep only their window and one micro-batch "
                          "of positions (a ring), and the earliest position they can go back "
                          "to is %d; evaluate again from 0, or keep every position "
                          "(--swa-full)", n, s->n_past, floor);
    if (recurrent && n > 0) {
        /* a recurrent state has no history: only its snapshot can be restored */
        if (n != s->snap_pos)
            return sl_err_set(err, SL_EINVAL, "cannot go back to position %d of %d: the "
                              "recurrent layers keep their state only at %d and at the "
                              "snapshot %d; evaluate again from 0", n, s->n_past, s->n_past,
                              s->snap_pos);
        memcpy(s->seq_state, s->seq_snap, (size_t)s->layout.bytes[SL_SB_seq_state]);
    }
    if (n == 0)
        for (int il = 0; il < s->m->hp.n_layer; il++) s->layer_state[il].ring_lo = 0;
    if (s->snap_pos > n) s->snap_pos = -1;
    s->n_past = n;
    return SL_OK;
}

int sl_session_truncate(sl_session *s, int n) { return sl_session_truncate_err(s, n, NULL); }
