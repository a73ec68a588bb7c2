/* session_save.c - a session's state to a file and back (sl_session_save,
 * sl_session_load): the prompt cache's storage.
 *
 * File layout (little-endian), all of it covered by checksums:
 *   header (SAVE_HEADER_BYTES): magic "SLSTATE1", version, header size, the
 *     model's identity (hash, total file bytes, n_layer, n_vocab), the
 *     cache value size (2 or 4; with the attention K and V types in the
 *     bits above 8 when they are not that size's plain type), token count, snapshot position, whether logits
 *     follow, the body's size and checksum, the total sequence state, the
 *     saved rows' kinds (row_kinds_put), and last a checksum of
 *     the header's preceding bytes;
 *   body: the tokens (int32), a table of every layer's state (mixer kind,
 *     the first position saved, bytes per position of each row stream,
 *     bytes of sequence state), each layer's row streams for the saved
 *     positions (all of them, or from that first position on: a sliding
 *     window's ring holds only its last ones) and its sequence state,
 *     the recurrent snapshot (every layer's sequence state at the snapshot
 *     position) when there is one, and the last logits (n_vocab floats).
 * A load reads and checks everything before it touches the session, so a
 * refused file leaves the session as it was. */
#include <stdlib.h>
#include <string.h>

#include "engine/kv_ring.h"
#include "engine/kv_rows.h"
#include "engine/mixer.h"
#include "engine/session.h"
#include "util/checked.h"
#include "util/file.h"
#include "util/out_file.h"

#define SAVE_MAGIC "SLSTATE1"
#define SAVE_VERSION 1u
#define SAVE_HEADER_BYTES 96u
#define SAVE_LAYER_BYTES 32u
#define ID_SAMPLE_BYTES (64u << 10) /* of tensor data hashed at each end of a file */
#define ID_HEADER_MAX (256ull << 20) /* GGUF headers hashed up to this size */

/* A session file replaces only another one (out_file.h). */
static const sl_out_kind session_kind = {"a session file", SAVE_MAGIC, 8};

/* ---- hashing: four independent 64-bit lanes over 8-byte words ---------- */

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t mix_word(uint64_t acc, uint64_t w) { return rotl64(acc ^ (w * P2), 31) * P1; }

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Hash of len bytes at p, chained onto h (every chunk of a file is hashed
 * this way in the same order when it is written and when it is read). */
static uint64_t hash_chunk(uint64_t h, const void *p, size_t len)
{
    const uint8_t *b = p;
    uint64_t l[4] = {h + P1, h ^ P2, h + P3, h - P1};
    size_t i = 0;
    for (; i + 32 <= len; i += 32)
        for (int k = 0; k < 4; k++) l[k] = mix_word(l[k], load_le64(b + i + 8 * (size_t)k));
    uint64_t t = rotl64(l[0], 1) + rotl64(l[1], 7) + rotl64(l[2], 12) + rotl64(l[3], 18);
    for (; i + 8 <= len; i += 8) t = mix_word(t, load_le64(b + i));
    for (; i < len; i++) t = (t ^ b[i]) * P3;
    t = mix_word(t, (uint64_t)len);
    t ^= t >> 33;
    t *= P2;
    t ^= t >> 29;
    return t;
}

uint64_t sl_session_file_hash(uint64_t h, const void *p, size_t len)
{
    return hash_chunk(h, p, len);
}

/* ---- little-endian fields ------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return load_le64(p); }

/* ---- the model's identity ------------------------------------------------ */

static int hash_range(const sl_file *f, uint64_t from, uint64_t len, uint8_t *buf, size_t cap,
                      uint64_t *h, sl_err *err)
{
    while (len > 0) {
        size_t n = len < cap ? (size_t)len : cap;
        int rc = sl_file_pread_full(f, buf, n, from, err);
        if (rc) return rc;
        *h = hash_chunk(*h, buf, n);
        from += n;
        len -= n;
    }
    return SL_OK;
}

/* Hashes every file of s's model: its size, its GGUF header (up to the
 * tensor data) and the first and last ID_SAMPLE_BYTES of the data. Cached
 * in the session after the first call. */
static int model_identity(sl_session *s, sl_err *err)
{
    if (s->model_id_set) return SL_OK;
    const sl_gguf *g = s->m->gguf;
    const size_t cap = 1u << 20;
    uint8_t *buf = malloc(cap);
    if (!buf) return sl_err_set(err, SL_ENOMEM, "out of memory");
    uint64_t h = 0, total = 0;
    int rc = SL_OK;
    for (uint32_t i = 0; i < sl_gguf_file_count(g) && !rc; i++) {
        sl_file f;
        rc = sl_file_open_read(&f, sl_gguf_file_path(g, i), err);
        if (rc) break;
        const uint64_t size = f.size, data = sl_gguf_data_offset(g, i);
        uint8_t sz[8];
        put64(sz, size);
        h = hash_chunk(h, sz, sizeof sz);
        if (!sl_add_u64(total, size, &total)) total = UINT64_MAX;
        uint64_t head = data < size ? data : size;
        if (head > ID_HEADER_MAX) head = ID_HEADER_MAX;
        rc = hash_range(&f, 0, head, buf, cap, &h, err);
        if (!rc && data < size) {
            const uint64_t rest = size - data;
            const uint64_t n = rest < ID_SAMPLE_BYTES ? rest : ID_SAMPLE_BYTES;
            rc = hash_range(&f, data, n, buf, cap, &h, err);
            if (!rc) rc = hash_range(&f, size - n, n, buf, cap, &h, err);
        }
        sl_file_close(&f);
    }
    free(buf);
    if (rc) return rc;
    s->model_id = h;
    s->model_bytes = total;
    s->model_id_set = true;
    return SL_OK;
}

/* ---- what a file of n tokens holds ---------------------------------------- */

typedef struct save_plan {
    uint32_t n_tokens;
    int32_t snap_pos;       /* -1: no snapshot saved */
    bool has_logits;
    const float *seq_src;   /* the sequence state saved (seq_state or seq_snap) */
    uint64_t seq_total;     /* bytes of every layer's sequence state */
    uint64_t body_bytes;
} save_plan;

/* The first position layer il's rows are saved from when the first n of
 * s's positions are saved: what the layer still holds (ring_lo; 0 for a
 * layer that holds every position). */
static uint32_t saved_lo(const sl_session *s, int il)
{
    const int lo = s->layer_state[il].ring_lo;
    return lo > 0 ? (uint32_t)lo : 0u;
}

/* The window layer il's continuation at position n needs before n: its
 * rows from max(0, n - n_swa + 1) (none for layers without a window). */
static uint32_t window_from(const sl_session *s, int il, uint32_t n)
{
    const sl_layer_desc *d = &s->m->layers[il].d;
    if (d->mixer != SL_MIXER_ATTN || d->attn.n_swa <= 0) return 0;
    const uint32_t w = (uint32_t)d->attn.n_swa;
    return n + 1 > w ? n + 1 - w : 0;
}

/* Bytes of the body for n tokens of s with the given extras, layer il's
 * rows saved from position lo[il] (NULL: every layer from 0); false on
 * overflow. */
static bool body_size(const sl_session *s, uint64_t n, const uint32_t *lo, bool snap,
                      bool logits, uint64_t *out)
{
    const sl_model *m = s->m;
    uint64_t b = 0, t;
    if (!sl_mul_u64(n, 4, &t) || !sl_add_u64(b, t, &b)) return false;
    if (!sl_mul_u64((uint64_t)m->hp.n_layer, SAVE_LAYER_BYTES, &t) || !sl_add_u64(b, t, &b))
        return false;
    const uint64_t seq = s->layout.bytes[SL_SB_seq_state];
    for (int il = 0; il < m->hp.n_layer; il++) {
        const uint64_t rows = n - (lo ? lo[il] : 0);
        for (int r = 0; r < 2; r++)
            if (!sl_mul_u64(rows, s->layer_state[il].row_bytes[r], &t) || !sl_add_u64(b, t, &b))
                return false;
    }
    if (!sl_add_u64(b, seq, &b)) return false;
    if (snap && !sl_add_u64(b, seq, &b)) return false;
    if (logits && !sl_add_u64(b, (uint64_t)m->hp.n_vocab * 4, &b)) return false;
    *out = b;
    return true;
}

/* The body's chunks, in file order, each given to fn: how the writer
 * writes and both sides hash. tokens is the token array as stored (LE). */
typedef int (*chunk_fn)(void *ud, const void *p, size_t len, sl_err *err);

static void layer_record(const sl_session *s, int il, uint32_t lo, uint8_t rec[SAVE_LAYER_BYTES])
{
    memset(rec, 0, SAVE_LAYER_BYTES);
    put32(rec, (uint32_t)s->m->layers[il].d.mixer);
    put32(rec + 4, lo); /* 0 in files of every position (and before rings) */
    put64(rec + 8, s->layer_state[il].row_bytes[0]);
    put64(rec + 16, s->layer_state[il].row_bytes[1]);
    put64(rec + 24, s->layer_state[il].seq_bytes);
}

/* Positions [lo, n) of stream r as one chunk of whole rows, in position
 * order: consecutive rows of a position-major stream (also in a ring:
 * kv_ring.h), or a head-major stream's rows gathered into a copy. */
static int stream_chunk(const sl_layer_state *ls, int r, uint32_t lo, uint32_t n, chunk_fn fn,
                        void *ud, sl_err *err)
{
    const size_t len = ls->row_bytes[r] * (n - lo);
    if (ls->heads[r] <= 1) return fn(ud, sl_kv_row(ls, r, (int)lo), len, err);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return sl_err_set(err, SL_ENOMEM, "out of memory (%.1f MiB to save a layer's cache)",
                          (double)len / (1 << 20));
    sl_kv_rows_get(ls, r, (int)lo, (int)(n - lo), buf);
    const int rc = fn(ud, buf, len, err);
    free(buf);
    return rc;
}

static int body_chunks(const sl_session *s, const save_plan *pl, const uint8_t *tokens_le,
                       chunk_fn fn, void *ud, sl_err *err)
{
    const int nl = s->m->hp.n_layer;
    int rc = fn(ud, tokens_le, (size_t)pl->n_tokens * 4, err);
    for (int il = 0; il < nl && !rc; il++) {
        uint8_t rec[SAVE_LAYER_BYTES];
        layer_record(s, il, saved_lo(s, il), rec);
        rc = fn(ud, rec, sizeof rec, err);
    }
    const uint8_t *seq_base = (const uint8_t *)s->seq_state;
    for (int il = 0; il < nl && !rc; il++) {
        const sl_layer_state *ls = &s->layer_state[il];
        /* positions [lo, n): consecutive rows, also in a ring (kv_ring.h) */
        const uint32_t lo = saved_lo(s, il);
        for (int r = 0; r < 2 && !rc; r++)
            if (ls->row_bytes[r])
                rc = stream_chunk(ls, r, lo, pl->n_tokens, fn, ud, err);
        if (!rc && ls->seq_bytes) {
            const size_t off = (size_t)((const uint8_t *)ls->seq - seq_base);
            rc = fn(ud, (const uint8_t *)pl->seq_src + off, ls->seq_bytes, err);
        }
    }
    if (!rc && pl->snap_pos >= 0) rc = fn(ud, s->seq_snap, (size_t)pl->seq_total, err);
    if (!rc && pl->has_logits)
        rc = fn(ud, sl_session_logits(s), (size_t)s->m->hp.n_vocab * sizeof(float), err);
    return rc;
}

static int hash_fn(void *ud, const void *p, size_t len, sl_err *err)
{
    (void)err;
    uint64_t *h = ud;
    *h = hash_chunk(*h, p, len);
    return SL_OK;
}

static int write_fn(void *ud, const void *p, size_t len, sl_err *err)
{
    return sl_out_write(ud, p, len, err);
}

/* Set in the header's cache field when quantised rows were stored rotated
 * (llama.cpp's attention rotation, mix_attn.c, since session 9): a file
 * saved before, or with the rotation off, holds other K and V values for
 * the same types and is refused by a rotating session (and the reverse). */
#define KV_FIELD_ROTATED (1u << 24)

/* The cache types as the header's field holds them: the value size of
 * the session's plain rows, and when the attention K and V types are not
 * that size's plain type, 1 + K + 4 V above bit 8 (so files of the plain
 * f16 and f32 caches keep the field they always had), and the rotation
 * bit. */
static uint32_t kv_field(const sl_session *s)
{
    const sl_kv_type plain = s->kv_elem == 4 ? SL_KV_F32 : SL_KV_F16;
    if (s->type_k == plain && s->type_v == plain) return (uint32_t)s->kv_elem;
    const bool rotated =
        s->attn_rot && (sl_kv_type_quantized(s->type_k) || sl_kv_type_quantized(s->type_v));
    return (uint32_t)s->kv_elem | (1u + (uint32_t)s->type_k + 4u * (uint32_t)s->type_v) << 8 |
           (rotated ? KV_FIELD_ROTATED : 0u);
}

/* The first layer of m whose kind keeps K-only rows of plain values
 * (mixer.h's SL_CACHE_K_PLAIN: their size is the field's low byte), or -1. */
static int first_plain_layer(const sl_model *m)
{
    for (int il = 0; il < m->hp.n_layer; il++)
        if (sl_mixer_of(m->layers[il].d.mixer)->cache == SL_CACHE_K_PLAIN) return il;
    return -1;
}

/* A header field's plain value size and attention K and V types. */
static void kv_field_decode(uint32_t f, uint32_t *elem, int *k, int *v)
{
    const uint32_t code = (f & ~KV_FIELD_ROTATED) >> 8;
    *elem = f & 0xFF;
    const sl_kv_type plain = *elem == 4 ? SL_KV_F32 : SL_KV_F16;
    *k = code ? (int)((code - 1) % 4) : (int)plain;
    *v = code ? (int)((code - 1) / 4) : (int)plain;
}

/* Whether a file's field describes the rows session s keeps (ours): the
 * same field, or the same K and V types and rotation on a model whose
 * layers keep no plain K-only rows, where the value size names no rows (a
 * file saved with -ctk f32 -ctv f32 before that size followed type_k
 * carries 2 there). */
static bool kv_field_same(const sl_session *s, uint32_t file, uint32_t ours)
{
    if (file == ours) return true;
    if (first_plain_layer(s->m) >= 0 || (file ^ ours) & KV_FIELD_ROTATED) return false;
    uint32_t fe, oe;
    int fk, fv, ok, ov;
    kv_field_decode(file, &fe, &fk, &fv);
    kv_field_decode(ours, &oe, &ok, &ov);
    return (fe == 2 || fe == 4) && fk == ok && fv == ov;
}

/* "K q8_0, V f16" for a header field, as kv_field writes it, and the
 * K-only rows' type on a model with such layers (m). */
static void kv_field_text(const sl_model *m, uint32_t f, char *buf, size_t cap)
{
    uint32_t elem;
    int k, v;
    kv_field_decode(f, &elem, &k, &v);
    const int il = first_plain_layer(m);
    char plain[64] = "";
    if (il >= 0)
        snprintf(plain, sizeof plain, " (%s rows %s)", sl_mixer_of(m->layers[il].d.mixer)->name,
                 elem == 4 ? "f32" : "f16");
    snprintf(buf, cap, "K %s, V %s%s", sl_kv_type_ok(k) ? sl_kv_type_name((sl_kv_type)k) : "?",
             sl_kv_type_ok(v) ? sl_kv_type_name((sl_kv_type)v) : "?", plain);
}

/* The kinds of the n saved rows (session.h SL_ROW_*: attention kernel and
 * product forms) as two header words. Every kind is a function of the
 * prompt extent the row was evaluated under (sl_session_row_kind), so the
 * file keeps the session's current extent P and how many leading rows
 * agree with it: word 0 that count, word 1 P + 1 (0: no prompt) with
 * bit 29 set and bit 30 the saver's decode_split > 1 (which decides a
 * one-row micro-batch's attention, SL_ROW_LONE or SL_ROW_SEQ). The rows
 * past the count read back as SL_ROW_UNKNOWN, which no prompt reuses.
 * Files written before (bit 29 clear) hold two runs instead: where the
 * leading run of tiled rows ends, and where the run after it ends with its
 * attention kernel in the top two bits; their rows took the batched
 * product forms. Both words 0: nothing known. */
#define KINDS_NEW (1u << 29)
#define KINDS_SPLIT (1u << 30)

static void row_kinds_put(const sl_session *s, uint32_t n, uint8_t *h)
{
    const int P = s->prompt_n;
    uint32_t a = 0;
    while (a < n && s->row_kind[a] == sl_session_row_kind(s, P, (int)a)) a++;
    put32(h, a);
    put32(h + 4, (uint32_t)(P + 1) | KINDS_NEW | (s->decode_split > 1 ? KINDS_SPLIT : 0u));
}

static void row_kinds_get(sl_session *s, uint32_t n, const uint8_t *h)
{
    const uint32_t a = get32(h), w = get32(h + 4);
    if (w & KINDS_NEW) {
        const int P = (int)(w & (KINDS_NEW - 1)) - 1;
        const bool split = (w & KINDS_SPLIT) != 0;
        for (uint32_t p = 0; p < n; p++) {
            if (p >= a) {
                s->row_kind[p] = SL_ROW_UNKNOWN;
                continue;
            }
            int k = sl_session_row_kind(s, P, (int)p);
            if (k & SL_MM_FORM_ONE) /* a one-row micro-batch: the saver's attention */
                k = (k & ~SL_ROW_ATTN) | (split ? SL_ROW_LONE : SL_ROW_SEQ);
            s->row_kind[p] = (uint8_t)k;
        }
        return;
    }
    const uint32_t b = w & ~(3u << 30), ka = w >> 30;
    for (uint32_t p = 0; p < n; p++)
        s->row_kind[p] = p < a && a <= n ? SL_ROW_TILED
                         : p < b && b <= n && ka <= SL_ROW_LONE ? (uint8_t)ka
                                                                 : SL_ROW_UNKNOWN;
}

static void header_make(const sl_session *s, const save_plan *pl, uint64_t body_hash,
                        uint8_t h[SAVE_HEADER_BYTES])
{
    memset(h, 0, SAVE_HEADER_BYTES);
    memcpy(h, SAVE_MAGIC, 8);
    put32(h + 8, SAVE_VERSION);
    put32(h + 12, SAVE_HEADER_BYTES);
    put64(h + 16, s->model_id);
    put64(h + 24, s->model_bytes);
    put32(h + 32, (uint32_t)s->m->hp.n_layer);
    put32(h + 36, (uint32_t)s->m->hp.n_vocab);
    put32(h + 40, kv_field(s));
    put32(h + 44, pl->n_tokens);
    put32(h + 48, (uint32_t)pl->snap_pos);
    put32(h + 52, pl->has_logits ? 1u : 0u);
    put64(h + 56, pl->body_bytes);
    put64(h + 64, body_hash);
    put64(h + 72, pl->seq_total);
    row_kinds_put(s, pl->n_tokens, h + 80);
    put64(h + 88, hash_chunk(0, h, 88));
}

int sl_session_save(sl_session *s, const char *path, const int32_t *tokens, int n, sl_err *err)
{
    if (!path || !tokens || n <= 0 || n > s->n_past)
        return sl_err_set(err, SL_EINVAL, "cannot save %d tokens of a session holding %d "
                          "(give 1 to %d tokens)", n, s->n_past, s->n_past);
    const uint64_t seq_total = s->layout.bytes[SL_SB_seq_state];
    save_plan pl = {.n_tokens = (uint32_t)n, .snap_pos = -1, .seq_src = s->seq_state,
                    .seq_total = seq_total};
    if (seq_total > 0) {
        if (n == s->n_past) {
            pl.snap_pos = s->snap_pos;
        } else if (n == s->snap_pos) {
            pl.seq_src = s->seq_snap; /* the state at n is the snapshot */
            pl.snap_pos = n;
        } else {
            return sl_err_set(err, SL_EINVAL, "cannot save the first %d of %d tokens: the "
                              "model's recurrent layers keep only the state at %d and at its "
                              "snapshot (%d)", n, s->n_past, s->n_past, s->snap_pos);
        }
    }
    pl.has_logits = n == s->n_past && s->n_logits > 0;
    for (int il = 0; il < s->m->hp.n_layer; il++)
        if (saved_lo(s, il) > window_from(s, il, (uint32_t)n))
            return sl_err_set(err, SL_EINVAL, "cannot save the first %d of %d tokens: layer "
                              "%d's sliding window keeps positions %u to %d only (a ring), "
                              "and position %d needs the %d before it; save all %d tokens, "
                              "or use --swa-full", n, s->n_past, il, saved_lo(s, il),
                              s->n_past - 1, n, s->m->layers[il].d.attn.n_swa - 1, s->n_past);
    uint32_t *lo = malloc(sizeof *lo * (size_t)s->m->hp.n_layer);
    if (!lo) return sl_err_set(err, SL_ENOMEM, "out of memory");
    for (int il = 0; il < s->m->hp.n_layer; il++) lo[il] = saved_lo(s, il);
    const bool sized = body_size(s, (uint64_t)n, lo, pl.snap_pos >= 0, pl.has_logits,
                                 &pl.body_bytes);
    free(lo);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->m->hp.n_vocab)
            return sl_err_set(err, SL_EINVAL, "cannot save: token %d is %d, outside the "
                              "vocabulary [0, %d)", i, tokens[i], s->m->hp.n_vocab);
    if (!sized) return sl_err_set(err, SL_ENOMEM, "the session's state is too large to save");
    int rc = model_identity(s, err);
    if (rc) return rc;
    uint8_t *tok_le = malloc((size_t)n * 4);
    if (!tok_le) return sl_err_set(err, SL_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) put32(tok_le + 4 * (size_t)i, (uint32_t)tokens[i]);

    uint64_t body_hash = 0;
    rc = body_chunks(s, &pl, tok_le, hash_fn, &body_hash, err);
    if (rc) {
        free(tok_le);
        return rc;
    }
    uint8_t hdr[SAVE_HEADER_BYTES];
    header_make(s, &pl, body_hash, hdr);

    sl_out_file out;
    rc = sl_out_open(&out, path, &session_kind, err);
    if (!rc) {
        rc = sl_out_write(&out, hdr, sizeof hdr, err);
        if (!rc) rc = body_chunks(s, &pl, tok_le, write_fn, &out, err);
        if (rc) sl_out_abort(&out);
        else rc = sl_out_commit(&out, err);
    }
    free(tok_le);
    return rc;
}

int sl_session_save_check(const char *path, sl_err *err)
{
    return sl_out_check(path, &session_kind, err);
}

/* ---- loading ---------------------------------------------------------------- */

static int refuse(sl_err *err, const char *path, const char *why)
{
    return sl_err_set(err, SL_EFORMAT, "session file '%s' refused: %s; it was not loaded",
                      path, why);
}

int sl_session_load(sl_session *s, const char *path, int32_t *tokens, int n_max, sl_err *err)
{
    if (!path || n_max < 0 || (n_max > 0 && !tokens))
        return sl_err_set(err, SL_EINVAL, "sl_session_load: bad arguments");
    int rc = model_identity(s, err);
    if (rc) return rc;
    sl_file f;
    rc = sl_file_open_read(&f, path, err);
    if (rc) return rc;
    char why[320];
    uint8_t h[SAVE_HEADER_BYTES];
    if (f.size < SAVE_HEADER_BYTES) {
        snprintf(why, sizeof why, "truncated: %llu bytes, shorter than its %u-byte header",
                 (unsigned long long)f.size, SAVE_HEADER_BYTES);
        goto refused;
    }
    if ((rc = sl_file_pread_full(&f, h, sizeof h, 0, err))) goto out;
    if (memcmp(h, SAVE_MAGIC, 8) != 0) {
        snprintf(why, sizeof why, "not a sluice session file (no \"%s\" magic)", SAVE_MAGIC);
        goto refused;
    }
    if (get32(h + 8) != SAVE_VERSION) {
        snprintf(why, sizeof why, "format version %u, this sluice reads version %u",
                 get32(h + 8), SAVE_VERSION);
        goto refused;
    }
    if (get32(h + 12) != SAVE_HEADER_BYTES) {
        snprintf(why, sizeof why, "its header size field is %u, a version %u header is %u "
                 "bytes (a damaged header)", get32(h + 12), SAVE_VERSION, SAVE_HEADER_BYTES);
        goto refused;
    }
    if (get64(h + 88) != hash_chunk(0, h, 88)) {
        snprintf(why, sizeof why, "corrupt header (checksum mismatch)");
        goto refused;
    }
    if (get64(h + 16) != s->model_id || get64(h + 24) != s->model_bytes ||
        get32(h + 32) != (uint32_t)s->m->hp.n_layer || get32(h + 36) != (uint32_t)s->m->hp.n_vocab) {
        snprintf(why, sizeof why, "made for another model (identity %016llx, %llu bytes; this "
                 "model is %016llx, %llu bytes)", (unsigned long long)get64(h + 16),
                 (unsigned long long)get64(h + 24), (unsigned long long)s->model_id,
                 (unsigned long long)s->model_bytes);
        goto refused;
    }
    const uint32_t file_kv = get32(h + 40), our_kv = kv_field(s);
    if ((file_kv ^ our_kv) == KV_FIELD_ROTATED) {
        snprintf(why, sizeof why, "its quantised cache was stored %s the attention rotation "
                 "llama.cpp applies and this session %s (saved by a sluice before the rotation, "
                 "or with it off): evaluate the prompt again",
                 file_kv & KV_FIELD_ROTATED ? "with" : "without",
                 our_kv & KV_FIELD_ROTATED ? "uses" : "does not use");
        goto refused;
    }
    if (!kv_field_same(s, file_kv, our_kv)) {
        char theirs[96], ours[96];
        kv_field_text(s->m, file_kv, theirs, sizeof theirs);
        kv_field_text(s->m, our_kv, ours, sizeof ours);
        snprintf(why, sizeof why, "its cache holds %s values, this session %s (use the same "
                 "--cache-type-k / --cache-type-v)", theirs, ours);
        goto refused;
    }
    const uint32_t n = get32(h + 44);
    const int32_t snap = (int32_t)get32(h + 48);
    const bool has_logits = get32(h + 52) == 1;
    const uint64_t seq_total = s->layout.bytes[SL_SB_seq_state];
    if (n == 0 || n > (uint32_t)s->n_ctx) {
        snprintf(why, sizeof why, "it holds %u tokens, the session's context is %d", n, s->n_ctx);
        goto refused;
    }
    if (get64(h + 72) != seq_total || get32(h + 52) > 1 || snap < -1 || (snap >= 0 && seq_total == 0) ||
        snap > (int32_t)n) {
        snprintf(why, sizeof why, "its state does not fit this model's layers");
        goto refused;
    }
    /* the body's size as the header says; what it holds is checked once
     * the layer table (each layer's first saved position) is read */
    const uint64_t want = get64(h + 56);
    uint64_t most, least;
    if (!body_size(s, n, NULL, snap >= 0, has_logits, &most) ||
        !sl_add_u64((uint64_t)n * 4, (uint64_t)s->m->hp.n_layer * SAVE_LAYER_BYTES, &least) ||
        want > most || want < least) {
        snprintf(why, sizeof why, "its state does not fit this model's layers (%llu bytes "
                 "after the header, at most %llu expected)", (unsigned long long)want,
                 (unsigned long long)most);
        goto refused;
    }
    if (f.size != SAVE_HEADER_BYTES + want) {
        snprintf(why, sizeof why, "%s: %llu bytes, the header says %llu",
                 f.size < SAVE_HEADER_BYTES + want ? "truncated" : "trailing bytes",
                 (unsigned long long)f.size, (unsigned long long)(SAVE_HEADER_BYTES + want));
        goto refused;
    }
    if (n > (uint32_t)n_max) {
        rc = (int)n; /* a peek, or the caller's buffer is too small */
        goto out;
    }
    const int nl = s->m->hp.n_layer;
    uint8_t *body = malloc((size_t)want);
    uint32_t *lo = malloc(sizeof *lo * (size_t)nl);
    if (!body || !lo) {
        free(body);
        free(lo);
        rc = sl_err_set(err, SL_ENOMEM, "out of memory reading session file '%s' (%.1f MiB)",
                        path, (double)want / (1 << 20));
        goto out;
    }
    if ((rc = sl_file_pread_full(&f, body, (size_t)want, SAVE_HEADER_BYTES, err))) {
        free(body);
        free(lo);
        goto out;
    }
    const uint8_t *tok_le = body, *table = body + (size_t)n * 4;
    /* each layer's first saved position: 0, or a sliding window's ring's
     * first (the window before n must be there) */
    bool ok = true;
    for (int il = 0; ok && il < nl; il++) {
        lo[il] = get32(table + (size_t)il * SAVE_LAYER_BYTES + 4);
        if (lo[il] > window_from(s, il, n)) {
            snprintf(why, sizeof why, "layer %d holds positions %u to %u, and continuing at "
                     "%u needs them from %u", il, lo[il], n - 1, n, window_from(s, il, n));
            ok = false;
        }
    }
    uint64_t sized = 0;
    if (ok && (!body_size(s, n, lo, snap >= 0, has_logits, &sized) || sized != want)) {
        snprintf(why, sizeof why, "its state does not fit this model's layers (%llu bytes "
                 "after the header, %llu expected)", (unsigned long long)want,
                 (unsigned long long)sized);
        ok = false;
    }
    if (!ok) {
        free(body);
        free(lo);
        goto refused;
    }
    /* the chunks in file order, as the writer hashed them */
    const uint8_t *p = body;
    uint64_t bh = hash_chunk(0, p, (size_t)n * 4);
    p = table;
    for (int il = 0; il < nl; il++, p += SAVE_LAYER_BYTES) bh = hash_chunk(bh, p, SAVE_LAYER_BYTES);
    const uint8_t *data = p;
    for (int il = 0; il < nl; il++) {
        const sl_layer_state *ls = &s->layer_state[il];
        for (int r = 0; r < 2; r++)
            if (ls->row_bytes[r]) {
                const size_t len = ls->row_bytes[r] * (n - lo[il]);
                bh = hash_chunk(bh, p, len);
                p += len;
            }
        if (ls->seq_bytes) {
            bh = hash_chunk(bh, p, ls->seq_bytes);
            p += ls->seq_bytes;
        }
    }
    if (snap >= 0) {
        bh = hash_chunk(bh, p, (size_t)seq_total);
        p += seq_total;
    }
    if (has_logits) bh = hash_chunk(bh, p, (size_t)s->m->hp.n_vocab * 4);
    ok = bh == get64(h + 64);
    if (!ok) snprintf(why, sizeof why, "corrupt (the checksum of its state differs)");
    for (int il = 0; ok && il < nl; il++) {
        uint8_t rec[SAVE_LAYER_BYTES];
        layer_record(s, il, lo[il], rec);
        if (memcmp(rec, table + (size_t)il * SAVE_LAYER_BYTES, SAVE_LAYER_BYTES) != 0) {
            snprintf(why, sizeof why, "layer %d's state kind or size differs from this model's", il);
            ok = false;
        }
    }
    for (uint32_t i = 0; ok && i < n; i++) {
        const int32_t id = (int32_t)get32(tok_le + 4 * (size_t)i);
        if (id < 0 || id >= s->m->hp.n_vocab) {
            snprintf(why, sizeof why, "token %u is %d, outside the vocabulary", i, id);
            ok = false;
        }
    }
    if (!ok) {
        free(body);
        free(lo);
        goto refused;
    }
    /* everything checked: now the session changes */
    for (uint32_t i = 0; i < n; i++) tokens[i] = (int32_t)get32(tok_le + 4 * (size_t)i);
    p = data;
    for (int il = 0; il < nl; il++) {
        sl_layer_state *ls = &s->layer_state[il];
        /* a ring keeps the last ring_cap of the saved positions, each in
         * both its slots; other streams take every saved row at its place */
        uint32_t keep = lo[il];
        if (ls->ring_cap > 0 && n - keep > (uint32_t)ls->ring_cap) keep = n - (uint32_t)ls->ring_cap;
        for (int r = 0; r < 2; r++)
            if (ls->row_bytes[r]) {
                const size_t rb = ls->row_bytes[r];
                const uint8_t *src = p + (size_t)(keep - lo[il]) * rb;
                if (ls->ring_cap <= 0 && ls->heads[r] <= 1)
                    memcpy(sl_kv_row(ls, r, (int)keep), src, rb * (n - keep));
                else
                    sl_kv_rows_put(ls, r, (int)keep, (int)(n - keep), src);
                p += rb * (n - lo[il]);
            }
        ls->ring_lo = (int)keep;
        if (ls->seq_bytes) {
            memcpy(ls->seq, p, ls->seq_bytes);
            p += ls->seq_bytes;
        }
    }
    s->snap_pos = -1;
    if (snap >= 0) {
        memcpy(s->seq_snap, p, (size_t)seq_total);
        p += seq_total;
        s->snap_pos = snap;
    }
    s->n_logits = 0;
    if (has_logits) {
        memcpy(s->logits, p, (size_t)s->m->hp.n_vocab * sizeof(float));
        s->n_logits = 1;
    }
    row_kinds_get(s, n, h + 80);
    s->n_past = (int)n;
    free(body);
    free(lo);
    rc = (int)n;
    goto out;
refused:
    rc = refuse(err, path, why);
out:
    sl_file_close(&f);
    return rc;
}
