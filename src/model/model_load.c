/* model_load.c - opening a GGUF model: architecture, hyperparameters,
 * tensor binding with shape checks, and reading the weights into memory.
 *
 * Every tensor the forward pass touches is bound here, by name, with its
 * expected shape; a missing or mis-shaped tensor fails the load with a
 * message naming it. Nothing after load looks tensors up by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_internal.h"
#include "model/value_ranges.h"
#include "tok/tokenizer.h"
#include "util/checked.h"
#include "util/mem.h"
#include "util/pool.h"
#include "io/io.h"
#include "ops/matmul_order.h"
#include "ops/ops.h"
#include "quant/vec_dot_rp.h"
#include "util/file.h"
#include "util/timer.h"
#include "util/status.h"

#define WEIGHT_ALIGN 64
#define LOAD_LANES 8

typedef sl_binder binder;

static void shape_str(char *buf, size_t cap, const uint64_t *ne, int n)
{
    size_t off = 0;
    off += (size_t)snprintf(buf + off, cap - off, "[");
    for (int i = 0; i < n && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%llu", i ? ", " : "",
                                (unsigned long long)ne[i]);
    if (off < cap) snprintf(buf + off, cap - off, "]");
}

/* Binds tensor `name` into t, checking its shape against want[0..n-1]
 * (trailing dims must be 1). An absent optional tensor leaves t->info and
 * t->data NULL. t->data is set later by place_weights (and stays NULL for
 * streamed experts). Sizes are added to the model's dense or expert total. */
static int bind(binder *b, sl_tensor *t, const char *name, bool required, int n,
                uint64_t w0, uint64_t w1, uint64_t w2)
{
    memset(t, 0, sizeof *t);
    const sl_gguf_tensor *info = sl_gguf_find_tensor(b->m->gguf, name);
    if (!info) {
        if (required)
            return sl_err_set(b->err, SL_EFORMAT, "tensor '%s' is missing (architecture %s)",
                              name, b->m->arch->name);
        return SL_OK;
    }
    const uint64_t want[4] = {w0, w1, w2, 1};
    bool ok = true;
    for (int i = 0; i < 4; i++)
        if (info->ne[i] != (i < n ? want[i] : 1)) ok = false;
    if (!ok) {
        char got[96], exp[96];
        shape_str(got, sizeof got, info->ne, (int)info->n_dims);
        shape_str(exp, sizeof exp, want, n);
        return sl_err_set(b->err, SL_EFORMAT, "tensor '%s' has shape %s, expected %s", name,
                          got, exp);
    }
    const sl_type_traits *tr = sl_type_get(info->type);
    const bool i32 = b->allow_i32 && info->type == SL_TYPE_I32 && n == 2;
    if (!i32 && (!tr || !tr->to_float))
        return sl_err_set(b->err, SL_EUNSUPPORTED, "tensor '%s' has type %s, which sluice "
                          "cannot compute with yet", name, sl_type_name(info->type));
    if (n == 1 && info->type != SL_TYPE_F32)
        return sl_err_set(b->err, SL_EUNSUPPORTED, "tensor '%s' has type %s; sluice expects "
                          "vectors (norms, biases) in f32", name, sl_type_name(info->type));
    t->name = info->name.ptr;
    t->type = info->type;
    memcpy(t->ne, info->ne, sizeof t->ne);
    t->nbytes = info->nbytes;
    t->row_bytes = i32 ? info->ne[0] * 4 : info->ne[0] / tr->block_size * tr->type_size;
    if (i32 && info->nbytes != t->row_bytes * info->ne[1])
        return sl_err_set(b->err, SL_EFORMAT, "tensor '%s' has %llu bytes for an I32 table of "
                          "%llu x %llu", name, (unsigned long long)info->nbytes,
                          (unsigned long long)info->ne[0], (unsigned long long)info->ne[1]);
    t->info = info;
    /* llama.cpp 2026-09 multiplies IQ4_XS matrices of rows % 8 == 0 (2-d
     * weights, expert tensors) in its IQ panel gemm's order (iqp.cpp); the
     * fixtures' build has no panel */
    t->iq_panel = b->llama_rev >= SL_LLAMA_REV_2026_09 && info->type == SL_TYPE_IQ4_XS &&
                  n >= 2 && info->ne[1] % 8 == 0;
    if (t->iq_panel) b->m->ubatch_bits = true;
    t->f32_vtail = b->llama_rev >= SL_LLAMA_REV_2026_09 && info->type == SL_TYPE_F32;
    uint64_t aligned;
    uint64_t *total = b->experts ? &b->m->expert_bytes : &b->m->dense_bytes;
    if (!sl_align_up_u64(info->nbytes, WEIGHT_ALIGN, &aligned) ||
        !sl_add_u64(*total, aligned, total))
        return sl_err_set(b->err, SL_ENOMEM, "model weights overflow the address space");
    return SL_OK;
}

int sl_bind_named(sl_binder *b, int il, sl_ltensor r, const char *suffix, bool required, int n,
                  uint64_t w0, uint64_t w1, uint64_t w2)
{
    char nm[160];
    b->experts = sl_layer_role(r)->routed;
    int rc = bind(b, &b->m->layers[il].t[r], sl_tensor_name(nm, sizeof nm, il + b->blk0, suffix),
                  required, n, w0, w1, w2);
    b->experts = false;
    return rc;
}

int sl_bind_role(sl_binder *b, int il, sl_ltensor r, bool required, int n, uint64_t w0,
                 uint64_t w1, uint64_t w2)
{
    return sl_bind_named(b, il, r, sl_layer_role(r)->suffix, required, n, w0, w1, w2);
}

/* Reads one bound tensor's bytes into the weight memory at *cursor, or
 * points it into the file mapping. */
static int place(sl_model *m, sl_tensor *t, uint8_t **cursor, sl_err *err)
{
    const sl_gguf_tensor *info = t->info;
    if (!info || t->view_of) return SL_OK; /* a view: set after its tensor */
    if (m->maps) {
        t->data = (const uint8_t *)m->maps[info->file_index] + info->offset;
        return SL_OK;
    }
    int rc = sl_gguf_read_tensor(m->gguf, info, 0, *cursor, info->nbytes, err);
    if (rc) return rc;
    t->data = *cursor;
    uint64_t aligned;
    sl_align_up_u64(info->nbytes, WEIGHT_ALIGN, &aligned);
    *cursor += aligned;
    return SL_OK;
}

/* Maps every model file read-only (--dense-weights mmap). */
static int map_files(sl_model *m, sl_err *err)
{
    const uint32_t n = sl_gguf_file_count(m->gguf);
    m->maps = calloc(n, sizeof *m->maps);
    m->map_sizes = calloc(n, sizeof *m->map_sizes);
    if (!m->maps || !m->map_sizes) return sl_err_set(err, SL_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        int rc = sl_file_map_read(sl_gguf_file_path(m->gguf, i), &m->maps[i], &m->map_sizes[i],
                                  err);
        if (rc) return rc;
    }
    return SL_OK;
}

/* The tensors that are resident (routed experts only when not streaming),
 * in placing order, into ts (room for 16 + n_layer * SL_LT_COUNT); returns
 * how many. */
static size_t resident_tensors(sl_model *m, bool streamed, sl_tensor **ts)
{
    size_t n = 0;
    ts[n++] = &m->tok_embd;
    ts[n++] = &m->output_norm;
    if (!m->output_tied) ts[n++] = &m->output;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (int r = 0; r < SL_LT_COUNT; r++)
            if (!(streamed && sl_layer_role((sl_ltensor)r)->routed) &&
                m->layers[il].t[r].info && !m->layers[il].t[r].view_of)
                ts[n++] = &m->layers[il].t[r];
    if (m->rope_freqs.info) ts[n++] = &m->rope_freqs;
    sl_tensor *nx[6] = {&m->nextn_eh_proj, &m->nextn_enorm, &m->nextn_hnorm,
                        &m->nextn_head_norm, &m->nextn_head, &m->nextn_embd};
    for (int i = 0; i < 6; i++)
        if (nx[i]->info) ts[n++] = nx[i];
    sl_tensor *head[3] = {&m->hc_head_fn, &m->hc_head_base, &m->hc_head_scale};
    for (int i = 0; i < 3; i++)
        if (head[i]->info) ts[n++] = head[i];
    return n;
}

/* Points the views (gemma4's gate and up inside ffn_gate_up_exps) into the
 * tensor they view, once that tensor has its data. */
static void set_views(sl_model *m)
{
    for (int il = 0; il < m->hp.n_layer; il++) {
        sl_layer *L = &m->layers[il];
        for (int r = 0; r < SL_LT_COUNT; r++) {
            sl_tensor *t = &L->t[r];
            const void *base = t->view_of ? L->t[t->view_of - 1].data : NULL;
            if (base) t->data = (const uint8_t *)base + t->view_offset;
        }
    }
}

/* Reads the resident tensors as the streamer reads experts: direct I/O on
 * every lane, into one huge-page allocation laid out as the file is (each
 * run of neighbouring tensors one aligned stretch, io_bulk.c), so the reads
 * land in place and nothing is copied. Returns 1 when this path does not
 * apply (a model in memory), so the caller reads tensor by tensor. */
static int read_direct(sl_model *m, const sl_model_params *p, bool streamed, sl_err *err)
{
    const uint32_t nf = sl_gguf_file_count(m->gguf);
    const char **paths = calloc(nf ? nf : 1, sizeof *paths);
    const size_t cap = 16 + (size_t)m->hp.n_layer * SL_LT_COUNT;
    sl_tensor **ts = malloc(sizeof *ts * cap);
    sl_io_range *rg = malloc(sizeof *rg * cap);
    sl_io *io = NULL;
    int rc = SL_OK;
    if (!paths || !ts || !rg) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < nf; i++)
        if (!(paths[i] = sl_gguf_file_path(m->gguf, i))) rc = 1;
    if (nf == 0 || rc == 1) {
        rc = 1;
        goto done;
    }
    const size_t n = resident_tensors(m, streamed, ts);
    for (size_t i = 0; i < n; i++)
        rg[i] = (sl_io_range){ts[i]->info->file_index, ts[i]->info->offset, ts[i]->nbytes, 0};
    sl_io_config cfg = {0};
    cfg.backend = p && p->io_backend == SL_IO_KIND_URING ? SL_IO_URING : SL_IO_PREAD;
    /* 8 lanes unless told: the reads are independent, and the lanes also
     * fault the fresh pages in, which on a busy VM ran slower than the drive
     * (docs/perf-log.md, issue 14 session 4: 8 lanes loaded 1.3-3.4x faster than 4) */
    cfg.lanes = (unsigned)(p && p->io_threads > 0 ? p->io_threads : LOAD_LANES);
    cfg.queue_depth = (unsigned)(p && p->io_queue_depth > 0 ? p->io_queue_depth : 4);
    if ((rc = sl_io_open(&io, &cfg, paths, nf, err))) goto done;
    const sl_io_info *info = sl_io_get_info(io);
    uint64_t bytes;
    if ((rc = sl_io_bulk_plan(rg, n, info->align, &bytes, err))) goto done;
    if (bytes > SIZE_MAX) {
        rc = sl_err_set(err, SL_ENOMEM, "model needs %llu bytes, more than this process can "
                        "address", (unsigned long long)bytes);
        goto done;
    }
    m->weights_bytes = bytes ? bytes : WEIGHT_ALIGN;
    m->weights = sl_mem_alloc_huge((size_t)m->weights_bytes);
    if (!m->weights) {
        rc = sl_err_set(err, SL_ENOMEM, "cannot allocate %.1f MiB for the model weights",
                        (double)bytes / (1 << 20));
        goto done;
    }
    const uint64_t t0 = sl_now_ns();
    rc = sl_io_bulk_read(io, rg, n, m->weights, bytes, p ? p->load_progress : NULL,
                         p ? p->load_progress_ud : NULL, &m->load.bytes, err);
    m->load.seconds = sl_ns_to_s(sl_now_ns() - t0);
    if (rc) {
        sl_err_prefix(err, "reading the model weights");
        goto done;
    }
    for (size_t i = 0; i < n; i++) ts[i]->data = (const uint8_t *)m->weights + rg[i].at;
    if (m->output_tied) m->output = m->tok_embd;
    snprintf(m->load.mode, sizeof m->load.mode, "%s%s%s, %s x%u, %s",
             info->direct ? sl_io_direct_word : "buffered (", info->direct ? "" : sl_io_direct_flag,
             info->direct ? "" : " refused)", sl_io_backend_name(info->backend), info->lanes,
             sl_mem_pages_name());
done:
    sl_io_close(io);
    free(paths);
    free(ts);
    free(rg);
    return rc;
}

/* Makes every bound tensor's data point at resident bytes: read into one
 * private allocation (direct reads laid out as the file is, or, for a model
 * in memory or with load_plain, tensor by tensor), or into the file
 * mappings. Routed experts are skipped when streaming (the streamer fetches
 * them). */
static int place_weights(sl_model *m, const sl_model_params *p, bool streamed, sl_err *err)
{
    int rc;
    uint64_t total = m->dense_bytes;
    if (!streamed && !sl_add_u64(total, m->expert_bytes, &total))
        return sl_err_set(err, SL_ENOMEM, "model size overflows");
    if (p && p->dense == SL_DENSE_MMAP) {
        if ((rc = map_files(m, err))) return rc;
        snprintf(m->load.mode, sizeof m->load.mode, "mapped (read on first use)");
    } else if (!(p && p->load_plain) && (rc = read_direct(m, p, streamed, err)) != 1) {
        if (rc == SL_OK) set_views(m);
        return rc;
    } else {
        if (total > SIZE_MAX)
            return sl_err_set(err, SL_ENOMEM, "model needs %llu bytes, more than this process "
                              "can address", (unsigned long long)total);
        /* On transparent huge pages: a token streams hundreds of MB of
         * weights, and 2 MiB pages spare the TLB a miss every 4 KiB. */
        m->weights_bytes = total ? (size_t)total : WEIGHT_ALIGN;
        m->weights = sl_mem_alloc_huge(m->weights_bytes);
        if (!m->weights)
            return sl_err_set(err, SL_ENOMEM, "cannot allocate %.1f MiB for the model weights",
                              (double)total / (1 << 20));
    }
    const uint64_t t0 = sl_now_ns();
    uint8_t *cur = m->weights;
    if ((rc = place(m, &m->tok_embd, &cur, err))) return rc;
    if ((rc = place(m, &m->output_norm, &cur, err))) return rc;
    if (m->output_tied)
        m->output = m->tok_embd;
    else if ((rc = place(m, &m->output, &cur, err)))
        return rc;
    for (int il = 0; il < m->hp.n_layer; il++) {
        sl_layer *L = &m->layers[il];
        for (int r = 0; r < SL_LT_COUNT; r++) {
            if (streamed && sl_layer_role((sl_ltensor)r)->routed) continue;
            if ((rc = place(m, &L->t[r], &cur, err))) return rc;
        }
    }
    if ((rc = place(m, &m->rope_freqs, &cur, err))) return rc;
    sl_tensor *nx[6] = {&m->nextn_eh_proj, &m->nextn_enorm, &m->nextn_hnorm,
                        &m->nextn_head_norm, &m->nextn_head, &m->nextn_embd};
    for (int i = 0; i < 6; i++)
        if ((rc = place(m, nx[i], &cur, err))) return rc;
    if ((rc = place(m, &m->hc_head_fn, &cur, err)) || (rc = place(m, &m->hc_head_base, &cur, err)) ||
        (rc = place(m, &m->hc_head_scale, &cur, err)))
        return rc;
    set_views(m);
    if (!m->maps) {
        m->load.bytes = (uint64_t)(cur - (uint8_t *)m->weights);
        m->load.seconds = sl_ns_to_s(sl_now_ns() - t0);
        snprintf(m->load.mode, sizeof m->load.mode, "buffered, one read per tensor");
    }
    return SL_OK;
}

/* Rewrites the resident matrices that take the reference's repacked
 * Q4_0 / IQ4_NL / MXFP4 order (ops/matmul_order.h: rows % 8 == 0, a 2-d
 * weight or an expert tensor of several experts) into the eight-row
 * interleaved layout their kernel streams (quant/vec_dot_rp.h), and marks
 * them so (sl_tensor.layout). Only the attention, dense, shared and routed
 * expert projections and an untied output head: matrices read whole by
 * the products alone (not the embedding's rows, not a view or a tensor
 * cut into per-head slices). Mapped weights (read-only) stay as they are;
 * so do streamed experts (read into the expert cache as the file has
 * them). Bits never change, only speed. Fails only for want of memory. */
static int interleave_x8(sl_model *m, sl_err *err)
{
    static const sl_ltensor roles[] = {
        SL_LT_WQ, SL_LT_WK, SL_LT_WV, SL_LT_WO, SL_LT_FFN_GATE, SL_LT_FFN_UP, SL_LT_FFN_DOWN,
        SL_LT_GATE_EXPS, SL_LT_UP_EXPS, SL_LT_DOWN_EXPS,
        SL_LT_GATE_SHEXP, SL_LT_UP_SHEXP, SL_LT_DOWN_SHEXP};
    if (m->maps) return SL_OK;
    const size_t nr = sizeof roles / sizeof roles[0];
    const size_t cap = (size_t)m->hp.n_layer * nr + 1;
    sl_tensor **ts = malloc(sizeof *ts * cap);
    bool *routed = malloc(sizeof *routed * cap);
    if (!ts || !routed) {
        free(ts);
        free(routed);
        return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    size_t n = 0;
    if (!m->output_tied) {
        routed[n] = false;
        ts[n++] = &m->output;
    }
    for (int il = 0; il < m->hp.n_layer; il++) {
        sl_layer *L = &m->layers[il];
        bool viewed[SL_LT_COUNT] = {false};
        for (int r = 0; r < SL_LT_COUNT; r++)
            if (L->t[r].view_of > 0 && L->t[r].view_of <= SL_LT_COUNT) viewed[L->t[r].view_of - 1] = true;
        for (size_t k = 0; k < nr; k++)
            if (!viewed[roles[k]]) {
                routed[n] = sl_layer_role(roles[k])->routed;
                ts[n++] = &L->t[roles[k]];
            }
    }
    size_t tmp_bytes = 0;
    size_t todo = 0;
    for (size_t i = 0; i < n; i++) {
        const sl_tensor *t = ts[i];
        const uint64_t n_mat = t->ne[2] ? t->ne[2] : 1;
        /* the n_experts the forward pass gives its matrices (forward.c) */
        const int64_t n_exp = routed[i] ? (int64_t)t->ne[2] : 0;
        const bool ok = t->info && t->data && !t->view_of && t->ne[3] <= 1 &&
                        (routed[i] || n_mat == 1) && sl_rp32_x8_applies(t->type, (int64_t)t->ne[1]) &&
                        sl_mm_order_for(t->type, (int64_t)t->ne[1], n_exp) == SL_MM_RP_B32 &&
                        t->row_bytes * t->ne[1] * n_mat == t->nbytes;
        if (!ok) continue;
        ts[todo++] = ts[i]; /* todo <= i: the list compacts in place */
        if (8 * (size_t)t->row_bytes > tmp_bytes) tmp_bytes = 8 * (size_t)t->row_bytes;
    }
    void *tmp = todo ? malloc(tmp_bytes) : NULL;
    free(routed);
    if (todo && !tmp) {
        free(ts);
        return sl_err_set(err, SL_ENOMEM, "out of memory for the weight interleave (%zu bytes)",
                          tmp_bytes);
    }
    for (size_t i = 0; i < todo; i++) {
        sl_tensor *t = ts[i];
        const int64_t all_rows = (int64_t)(t->ne[1] * (t->ne[2] ? t->ne[2] : 1));
        sl_rp32_x8_interleave(t->type, (void *)t->data, all_rows, (int64_t)t->ne[0],
                              (size_t)t->row_bytes, tmp);
        t->layout = SL_MAT_X8;
    }
    free(tmp);
    free(ts);
    return SL_OK;
}

int sl_bind_global(sl_binder *b, sl_tensor *t, const char *name, bool required, int n,
                   uint64_t w0, uint64_t w1, uint64_t w2)
{
    return bind(b, t, name, required, n, w0, w1, w2);
}

/* Per-expert scales ([n_expert] each: llama.cpp's generic
 * ffn_{gate,up,down}_exps.scale, which any architecture's file may carry)
 * for a routed layer whose family did not bind them; the forward pass
 * multiplies each expert's product rows by them when present. */
static int bind_expert_scales(binder *b, int il)
{
    const sl_layer *L = &b->m->layers[il];
    if (L->d.ffn.kind != SL_FFN_ROUTED) return SL_OK;
    static const sl_ltensor roles[] = {SL_LT_GATE_EXPS_S, SL_LT_UP_EXPS_S, SL_LT_DOWN_EXPS_S};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        if (L->t[roles[i]].info) continue;
        int rc = sl_bind_role(b, il, roles[i], false, 1, (uint64_t)L->d.ffn.router.n_expert, 0, 0);
        if (rc) return rc;
    }
    return SL_OK;
}

/* The model becomes the file's MTP block number k (1-based) alone: its one
 * layer is GGUF block n_layer + k - 1. */
static int nextn_only(binder *b, int k, sl_err *err)
{
    sl_hparams *hp = &b->m->hp;
    if (hp->n_nextn < k)
        return sl_err_set(err, SL_EUNSUPPORTED, "the model has %s MTP block%s "
                          "(nextn_predict_layers %d): it cannot draft with --spec-type draft-mtp",
                          hp->n_nextn ? "only" : "no", hp->n_nextn == 1 ? "" : "s", hp->n_nextn);
    b->blk0 = hp->n_layer + k - 1;
    hp->n_layer = 1;
    hp->n_nextn = 0;
    return SL_OK;
}

/* The MTP block's own tensors (model.h, nextn_*): eh_proj, enorm and hnorm
 * required; the head's norm and matrix and its own embedding optional, as llama.cpp
 * has them. */
static int bind_nextn(binder *b)
{
    sl_model *m = b->m;
    const uint64_t E = (uint64_t)m->hp.n_embd, V = (uint64_t)m->hp.n_vocab;
    const struct {
        sl_tensor *t;
        const char *suffix;
        bool required;
        int n;
        uint64_t w0, w1;
    } nx[] = {
        {&m->nextn_eh_proj, "nextn.eh_proj.weight", true, 2, 2 * E, E},
        {&m->nextn_enorm, "nextn.enorm.weight", true, 1, E, 0},
        {&m->nextn_hnorm, "nextn.hnorm.weight", true, 1, E, 0},
        {&m->nextn_head_norm, "nextn.shared_head_norm.weight", false, 1, E, 0},
        {&m->nextn_head, "nextn.shared_head_head.weight", false, 2, E, V},
        {&m->nextn_embd, "nextn.embed_tokens.weight", false, 2, E, V},
    };
    char nm[160];
    for (size_t i = 0; i < sizeof nx / sizeof nx[0]; i++) {
        int rc = bind(b, nx[i].t, sl_tensor_name(nm, sizeof nm, b->blk0, nx[i].suffix),
                      nx[i].required, nx[i].n, nx[i].w0, nx[i].w1, 0);
        if (rc) return rc;
    }
    return SL_OK;
}

void sl_model_load_stats(const sl_model *m, sl_load_stats *out) { *out = m->load; }

sl_model_params sl_model_default_params(void)
{
    sl_model_params p = {.n_threads = 0, .stream = SL_STREAM_AUTO, .dense = SL_DENSE_ANON};
    return p;
}

int sl_model_read(sl_model **out, const char *path, const sl_model_params *params,
                  sl_err *err)
{
    *out = NULL;
    sl_model *m = calloc(1, sizeof *m);
    if (!m) return sl_err_set(err, SL_ENOMEM, "out of memory");
    int rc = sl_gguf_open(&m->gguf, path, err);
    if (rc) goto fail;

    const char *arch_name = sl_gguf_get_str(m->gguf, "general.architecture");
    if (!arch_name) {
        rc = sl_err_set(err, SL_EFORMAT, "'%s' has no general.architecture key", path);
        goto fail;
    }
    m->arch = sl_arch_find(arch_name);
    if (!m->arch) {
        rc = sl_err_set(err, SL_EUNSUPPORTED, "architecture '%s' is not supported (supported: %s)",
                        arch_name, sl_arch_supported_list());
        goto fail;
    }
    if ((rc = sl_hparams_read(&m->hp, m->gguf, m->arch, err))) goto fail;

    binder b = {.m = m, .experts = false, .err = err,
                .llama_rev = params ? params->llama_rev : SL_LLAMA_REV_2026_08};
    const sl_gguf_tensor *emb = sl_gguf_find_tensor(m->gguf, SL_T_TOKEN_EMBD);
    if (!emb) {
        rc = sl_err_set(err, SL_EFORMAT, "tensor '%s' is missing", SL_T_TOKEN_EMBD);
        goto fail;
    }
    if (emb->ne[1] == 0 || emb->ne[1] > (1u << 24)) {
        rc = sl_err_set(err, SL_EFORMAT, "tensor '%s' has %llu rows: not a vocabulary size",
                        SL_T_TOKEN_EMBD, (unsigned long long)emb->ne[1]);
        goto fail;
    }
    m->hp.n_vocab = (int)emb->ne[1];
    /* the tokenizer travels with the model; its ids must index token_embd */
    if (sl_gguf_find(m->gguf, "tokenizer.ggml.model")) {
        if ((rc = sl_tokenizer_load(&m->tok, m->gguf, err))) goto fail;
        if (sl_tokenizer_n_tokens(m->tok) > (uint32_t)m->hp.n_vocab) {
            rc = sl_err_set(err, SL_EFORMAT, "the tokenizer has %u tokens but '%s' only %d rows",
                            sl_tokenizer_n_tokens(m->tok), SL_T_TOKEN_EMBD, m->hp.n_vocab);
            goto fail;
        }
    }
    const uint64_t E = (uint64_t)m->hp.n_embd, V = (uint64_t)m->hp.n_vocab;
    if ((rc = bind(&b, &m->tok_embd, SL_T_TOKEN_EMBD, true, 2, E, V, 0))) goto fail;
    if ((rc = bind(&b, &m->output_norm, SL_T_OUTPUT_NORM, true, 1, E, 0, 0))) goto fail;
    if ((rc = bind(&b, &m->output, SL_T_OUTPUT, false, 2, E, V, 0))) goto fail;
    m->output_tied = m->output.info == NULL; /* no output.weight: tied head */

    if (params && params->nextn_block > 0 && (rc = nextn_only(&b, params->nextn_block, err)))
        goto fail;
    m->layers = calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    if (!m->layers) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        goto fail;
    }
    for (int il = 0; il < m->hp.n_layer; il++)
        if ((rc = m->arch->layer(&b, il)) || (rc = bind_expert_scales(&b, il))) goto fail;
    if (b.blk0 && (rc = bind_nextn(&b))) goto fail;
    m->described_only = params && params->describe_only;
    *out = m;
    return SL_OK;
fail:
    sl_model_release(m);
    return rc;
}

int sl_model_place_weights(sl_model *m, const sl_model_params *params, bool experts_streamed,
                           sl_err *err)
{
    int rc = place_weights(m, params, experts_streamed, err);
    if (!rc) rc = sl_check_small_tensors(m, err);
    return rc ? rc : interleave_x8(m, err);
}

void sl_model_release(sl_model *m)
{
    if (!m) return;
    if (m->maps)
        for (uint32_t i = 0; i < sl_gguf_file_count(m->gguf); i++)
            sl_file_unmap(m->maps[i], m->map_sizes[i]);
    free(m->maps);
    free(m->map_sizes);
    sl_mem_free_huge(m->weights, m->weights_bytes);
    free(m->layers);
    sl_tokenizer_free(m->tok);
    sl_gguf_close(m->gguf);
    free(m);
}

int sl_model_n_vocab(const sl_model *m) { return m->hp.n_vocab; }
int sl_model_n_ctx_train(const sl_model *m) { return m->hp.n_ctx_train; }

int sl_model_exact_batch(const sl_model *m, int n_batch)
{
    return m->ubatch_bits && n_batch > SL_LLAMA_UBATCH ? SL_LLAMA_UBATCH : n_batch;
}
const char *sl_model_arch_name(const sl_model *m) { return m->arch->name; }
