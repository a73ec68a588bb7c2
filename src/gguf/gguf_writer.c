/* gguf_writer.c - streaming GGUF v3 writer.
 *
 * Owns: serialising metadata and tensor infos, laying tensors out at aligned
 * offsets, and streaming tensor bytes through one large buffer so a file of
 * any size is written with big sequential writes and a few MiB of RAM.
 * Must not know: models, or what any tensor holds.
 *
 * Metadata is serialised as it is set (the header needs only the bytes);
 * tensor declarations are kept; the header is written when the first data
 * byte arrives (or at close), because only then is the layout final.
 *
 * Direct I/O (sl_gguf_writer_direct_io): every byte then goes through the
 * buffer, which is aligned and written only when full, so each write starts
 * at a multiple of WRITE_BUF; the partial last buffer is written up to its
 * last whole block directly and the rest as an ordinary write. A direct
 * write returns only when the device has the data, so full buffers go to a
 * background thread while the caller fills a second one (the caller waits
 * only when the device is slower than it). */
#include "gguf/gguf_writer.h"
#include "gguf/gguf_internal.h" /* SL_GGUF_MAX_ARRAY_DEPTH */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "util/aligned.h"
#include "util/checked.h"
#include "util/file.h"
#include "util/out_file.h"

#define WRITE_BUF ((size_t)8 << 20)

typedef unsigned long long ull;

typedef struct wtensor {
    char *name;
    size_t name_len;
    sl_type type;
    uint32_t n_dims;
    uint64_t ne[SL_GGUF_MAX_DIMS];
    uint64_t nbytes;
    uint64_t offset; /* relative to the data section, set at header time */
} wtensor;

enum { ST_DECLARE, ST_DATA, ST_FAILED };

/* The background writer of direct mode: one job (a full buffer) at a time. */
typedef struct wio {
    bool on;                /* thread running */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const uint8_t *job;     /* buffer being written; NULL: idle */
    size_t job_len;
    bool quit;
    int rc;                 /* first failure of a job */
    sl_err err;
} wio;

struct sl_gguf_writer {
    sl_out_file out; /* out_file.h: a temporary file beside the target */
    int state;
    sl_err failure; /* first error, reported again by every later call */
    uint64_t alignment;

    uint8_t *meta; /* serialised kv pairs */
    size_t meta_len, meta_cap;
    uint64_t n_kv;
    char **keys;   /* for duplicate detection (few keys: linear search) */
    size_t keys_cap;

    wtensor *t;
    uint64_t n_t, t_cap;
    uint64_t *hash; /* open addressing over tensor names: index + 1, 0 = empty */
    uint64_t hash_cap;

    uint8_t *buf; /* output buffer, aligned for direct I/O */
    size_t buf_len;
    bool direct;  /* O_DIRECT on: no write bypasses buf */
    uint8_t *buf2; /* direct mode: the buffer the background thread is not
                      writing (swapped with buf at each hand-off) */
    wio io;
    uint64_t cur;      /* tensor being streamed */
    uint64_t cur_done; /* bytes of it received */
    uint64_t written;  /* bytes handed to the OS so far */
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int wfail(sl_gguf_writer *w, int code, const char *fmt, ...)
{
    if (w->state == ST_FAILED) return w->failure.code;
    char msg[SL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sl_err_set(&w->failure, code, "%s: %s", w->out.f.path ? w->out.f.path : "gguf writer", msg);
    w->state = ST_FAILED;
    return code;
}

/* Copies the writer's failure into the caller's err and returns its code. */
static int report(const sl_gguf_writer *w, sl_err *err)
{
    if (err) *err = w->failure;
    return w->failure.code;
}

int sl_gguf_writer_open(sl_gguf_writer **out, const char *path, sl_err *err)
{
    *out = NULL;
    sl_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return sl_err_set(err, SL_ENOMEM, "out of memory opening a GGUF writer");
    w->out.f.fd = -1;
    w->alignment = SL_GGUF_DEFAULT_ALIGNMENT;
    w->buf = sl_aligned_alloc(SL_FILE_DIRECT_ALIGN, WRITE_BUF);
    if (!w->buf) {
        free(w);
        return sl_err_set(err, SL_ENOMEM, "out of memory opening a GGUF writer");
    }
    static const sl_out_kind gguf_kind = {"a GGUF model", "GGUF", 4};
    int rc = sl_out_open(&w->out, path, &gguf_kind, err);
    if (rc) {
        sl_aligned_free(w->buf);
        free(w);
        return rc;
    }
    *out = w;
    return SL_OK;
}

static void *io_main(void *arg)
{
    sl_gguf_writer *w = arg;
    wio *io = &w->io;
    pthread_mutex_lock(&io->mu);
    for (;;) {
        while (!io->job && !io->quit) pthread_cond_wait(&io->cv, &io->mu);
        if (!io->job) break; /* quit, nothing pending */
        const uint8_t *p = io->job;
        size_t n = io->job_len;
        pthread_mutex_unlock(&io->mu);
        sl_err e;
        int rc = sl_file_write_full(&w->out.f, p, n, &e);
        pthread_mutex_lock(&io->mu);
        if (rc && !io->rc) {
            io->rc = rc;
            io->err = e;
        }
        io->job = NULL;
        pthread_cond_broadcast(&io->cv);
    }
    pthread_mutex_unlock(&io->mu);
    return NULL;
}

/* Waits until the background job (if any) is done; reports its failure. */
static int io_wait(sl_gguf_writer *w)
{
    wio *io = &w->io;
    if (!io->on) return SL_OK;
    pthread_mutex_lock(&io->mu);
    while (io->job) pthread_cond_wait(&io->cv, &io->mu);
    int rc = io->rc;
    sl_err e = io->err;
    pthread_mutex_unlock(&io->mu);
    if (rc && w->state != ST_FAILED) {
        w->failure = e;
        w->state = ST_FAILED;
    }
    return rc;
}

static void io_stop(sl_gguf_writer *w)
{
    wio *io = &w->io;
    if (!io->on) return;
    pthread_mutex_lock(&io->mu);
    io->quit = true;
    pthread_cond_broadcast(&io->cv);
    pthread_mutex_unlock(&io->mu);
    pthread_join(io->th, NULL); /* after the job in flight, if any */
    pthread_mutex_destroy(&io->mu);
    pthread_cond_destroy(&io->cv);
    io->on = false;
}

bool sl_gguf_writer_direct_io(sl_gguf_writer *w)
{
    if (w->state != ST_DECLARE || w->direct) return w->direct;
    w->direct = sl_file_set_direct(&w->out.f, true);
    if (!w->direct) return false;
    /* Without a second buffer or thread, direct writes simply block. */
    void *b2 = sl_aligned_alloc(SL_FILE_DIRECT_ALIGN, WRITE_BUF);
    if (!b2) return true;
    wio *io = &w->io;
    if (pthread_mutex_init(&io->mu, NULL)) goto no_thread;
    if (pthread_cond_init(&io->cv, NULL)) {
        pthread_mutex_destroy(&io->mu);
        goto no_thread;
    }
    if (pthread_create(&io->th, NULL, io_main, w)) {
        pthread_cond_destroy(&io->cv);
        pthread_mutex_destroy(&io->mu);
        goto no_thread;
    }
    io->on = true;
    w->buf2 = b2;
    return true;
no_thread:
    sl_aligned_free(b2);
    return true;
}

void sl_gguf_writer_abort(sl_gguf_writer *w)
{
    if (!w) return;
    io_stop(w);
    sl_aligned_free(w->buf2);
    sl_out_abort(&w->out);
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    for (uint64_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->t);
    free(w->hash);
    free(w->meta);
    sl_aligned_free(w->buf);
    free(w);
}

/* ---- metadata ------------------------------------------------------------ */

static bool meta_put(sl_gguf_writer *w, const void *p, size_t n)
{
    if (w->meta_cap - w->meta_len < n) {
        size_t cap = w->meta_cap ? w->meta_cap : 4096;
        while (cap - w->meta_len < n) {
            if (cap > SIZE_MAX / 2) return false;
            cap *= 2;
        }
        uint8_t *m = realloc(w->meta, cap);
        if (!m) return false;
        w->meta = m;
        w->meta_cap = cap;
    }
    if (n) memcpy(w->meta + w->meta_len, p, n);
    w->meta_len += n;
    return true;
}

static bool meta_uint(sl_gguf_writer *w, uint64_t v, unsigned n)
{
    uint8_t b[8];
    for (unsigned i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    return meta_put(w, b, n);
}

static bool meta_str(sl_gguf_writer *w, const char *s, uint64_t len)
{
    return meta_uint(w, len, 8) && len <= SIZE_MAX && meta_put(w, s, (size_t)len);
}

static unsigned scalar_size(sl_gguf_vtype t)
{
    switch (t) {
    case SL_GGUF_UINT8: case SL_GGUF_INT8: case SL_GGUF_BOOL: return 1;
    case SL_GGUF_UINT16: case SL_GGUF_INT16: return 2;
    case SL_GGUF_UINT32: case SL_GGUF_INT32: case SL_GGUF_FLOAT32: return 4;
    case SL_GGUF_UINT64: case SL_GGUF_INT64: case SL_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

/* Serialises a value body (no type tag); false on out of memory or a
 * malformed value (unknown type, too deep). */
static bool meta_value(sl_gguf_writer *w, const sl_gguf_value *v, int depth);

static bool meta_array(sl_gguf_writer *w, const sl_gguf_array *a, int depth)
{
    if (depth > SL_GGUF_MAX_ARRAY_DEPTH || (unsigned)a->type >= SL_GGUF_VTYPE_COUNT)
        return false;
    if (!meta_uint(w, (uint32_t)a->type, 4) || !meta_uint(w, a->n, 8)) return false;
    if (a->n == 0) return true;
    if (a->type == SL_GGUF_STRING) {
        const sl_gguf_str *s = a->data;
        for (uint64_t i = 0; i < a->n; i++)
            if (!meta_str(w, s[i].ptr, s[i].len)) return false;
        return true;
    }
    if (a->type == SL_GGUF_ARRAY) {
        const sl_gguf_value *e = a->data;
        for (uint64_t i = 0; i < a->n; i++)
            if (e[i].type != SL_GGUF_ARRAY || !meta_array(w, &e[i].v.arr, depth + 1))
                return false;
        return true;
    }
    uint64_t bytes;
    unsigned es = scalar_size(a->type);
    if (!sl_mul_u64(a->n, es, &bytes) || bytes > SIZE_MAX) return false;
    if (a->type == SL_GGUF_BOOL) {
        const uint8_t *b = a->data;
        for (uint64_t i = 0; i < a->n; i++)
            if (b[i] > 1) return false;
    }
    return meta_put(w, a->data, (size_t)bytes);
}

static bool meta_value(sl_gguf_writer *w, const sl_gguf_value *v, int depth)
{
    switch (v->type) {
    case SL_GGUF_UINT8: case SL_GGUF_UINT16: case SL_GGUF_UINT32: case SL_GGUF_UINT64:
        return meta_uint(w, v->v.u64, scalar_size(v->type));
    case SL_GGUF_INT8: case SL_GGUF_INT16: case SL_GGUF_INT32: case SL_GGUF_INT64:
        return meta_uint(w, (uint64_t)v->v.i64, scalar_size(v->type));
    case SL_GGUF_FLOAT32: {
        float f = (float)v->v.f64;
        uint32_t b;
        memcpy(&b, &f, 4);
        return meta_uint(w, b, 4);
    }
    case SL_GGUF_FLOAT64: {
        uint64_t b;
        memcpy(&b, &v->v.f64, 8);
        return meta_uint(w, b, 8);
    }
    case SL_GGUF_BOOL: return meta_uint(w, v->v.b ? 1 : 0, 1);
    case SL_GGUF_STRING: return meta_str(w, v->v.str.ptr, v->v.str.len);
    case SL_GGUF_ARRAY: return meta_array(w, &v->v.arr, depth + 1);
    default: return false;
    }
}

/* Integer value that must be in range of its declared width. */
static bool int_fits(const sl_gguf_value *v)
{
    switch (v->type) {
    case SL_GGUF_UINT8: return v->v.u64 <= UINT8_MAX;
    case SL_GGUF_UINT16: return v->v.u64 <= UINT16_MAX;
    case SL_GGUF_UINT32: return v->v.u64 <= UINT32_MAX;
    case SL_GGUF_INT8: return v->v.i64 >= INT8_MIN && v->v.i64 <= INT8_MAX;
    case SL_GGUF_INT16: return v->v.i64 >= INT16_MIN && v->v.i64 <= INT16_MAX;
    case SL_GGUF_INT32: return v->v.i64 >= INT32_MIN && v->v.i64 <= INT32_MAX;
    default: return true;
    }
}

int sl_gguf_writer_set_value(sl_gguf_writer *w, const char *key, const sl_gguf_value *v)
{
    if (w->state == ST_FAILED) return w->failure.code;
    if (w->state != ST_DECLARE)
        return wfail(w, SL_EINVAL, "metadata key '%s' set after tensor data writing began",
                     key ? key : "(null)");
    if (!key || !*key) return wfail(w, SL_EINVAL, "empty metadata key");
    if ((unsigned)v->type >= SL_GGUF_VTYPE_COUNT)
        return wfail(w, SL_EINVAL, "metadata '%s': unknown value type %d", key, (int)v->type);
    if (!int_fits(v))
        return wfail(w, SL_EINVAL, "metadata '%s': value out of range for %s", key,
                     sl_gguf_vtype_name(v->type));
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key))
            return wfail(w, SL_EINVAL, "metadata key '%s' set twice", key);
    if (!strcmp(key, "general.alignment")) {
        uint64_t a = v->type == SL_GGUF_UINT32 ? v->v.u64 : 0;
        if (a == 0 || (a & (a - 1)))
            return wfail(w, SL_EINVAL,
                         "general.alignment must be a uint32 non-zero power of two");
        w->alignment = a;
    }
    if (w->n_kv == w->keys_cap) {
        size_t cap = w->keys_cap ? w->keys_cap * 2 : 32;
        char **k = realloc(w->keys, cap * sizeof *k);
        if (!k) return wfail(w, SL_ENOMEM, "out of memory setting '%s'", key);
        w->keys = k;
        w->keys_cap = cap;
    }
    size_t klen = strlen(key);
    char *kc = malloc(klen + 1);
    if (!kc) return wfail(w, SL_ENOMEM, "out of memory setting '%s'", key);
    memcpy(kc, key, klen + 1);
    size_t mark = w->meta_len;
    if (!meta_str(w, key, klen) || !meta_uint(w, (uint32_t)v->type, 4) ||
        !meta_value(w, v, 0)) {
        free(kc);
        w->meta_len = mark;
        return wfail(w, SL_EINVAL,
                     "metadata '%s': value could not be serialised (out of memory, malformed "
                     "or nested deeper than %d)",
                     key, SL_GGUF_MAX_ARRAY_DEPTH);
    }
    w->keys[w->n_kv++] = kc;
    return SL_OK;
}

int sl_gguf_writer_set_u32(sl_gguf_writer *w, const char *key, uint32_t v)
{
    sl_gguf_value x = {.type = SL_GGUF_UINT32, .v.u64 = v};
    return sl_gguf_writer_set_value(w, key, &x);
}

int sl_gguf_writer_set_i32(sl_gguf_writer *w, const char *key, int32_t v)
{
    sl_gguf_value x = {.type = SL_GGUF_INT32, .v.i64 = v};
    return sl_gguf_writer_set_value(w, key, &x);
}

int sl_gguf_writer_set_u64(sl_gguf_writer *w, const char *key, uint64_t v)
{
    sl_gguf_value x = {.type = SL_GGUF_UINT64, .v.u64 = v};
    return sl_gguf_writer_set_value(w, key, &x);
}

int sl_gguf_writer_set_f32(sl_gguf_writer *w, const char *key, float v)
{
    sl_gguf_value x = {.type = SL_GGUF_FLOAT32, .v.f64 = v};
    return sl_gguf_writer_set_value(w, key, &x);
}

int sl_gguf_writer_set_bool(sl_gguf_writer *w, const char *key, bool v)
{
    sl_gguf_value x = {.type = SL_GGUF_BOOL, .v.b = v};
    return sl_gguf_writer_set_value(w, key, &x);
}

int sl_gguf_writer_set_str(sl_gguf_writer *w, const char *key, const char *v)
{
    if (!v) return wfail(w, SL_EINVAL, "metadata '%s': NULL string", key ? key : "(null)");
    sl_gguf_value x = {.type = SL_GGUF_STRING, .v.str = {v, strlen(v)}};
    return sl_gguf_writer_set_value(w, key, &x);
}

int sl_gguf_writer_set_arr_str(sl_gguf_writer *w, const char *key, const char *const *v,
                               uint64_t n)
{
    if (w->state == ST_FAILED) return w->failure.code;
    uint64_t bytes;
    if (!sl_mul_u64(n, sizeof(sl_gguf_str), &bytes) || bytes > SIZE_MAX)
        return wfail(w, SL_ENOMEM, "metadata '%s': array too large", key);
    sl_gguf_str *s = malloc(bytes ? (size_t)bytes : 1);
    if (!s) return wfail(w, SL_ENOMEM, "out of memory setting '%s'", key);
    for (uint64_t i = 0; i < n; i++) {
        if (!v[i]) {
            free(s);
            return wfail(w, SL_EINVAL, "metadata '%s': element %llu is NULL", key, (ull)i);
        }
        s[i].ptr = v[i];
        s[i].len = strlen(v[i]);
    }
    sl_gguf_value x = {.type = SL_GGUF_ARRAY, .v.arr = {SL_GGUF_STRING, n, s}};
    int rc = sl_gguf_writer_set_value(w, key, &x);
    free(s);
    return rc;
}

int sl_gguf_writer_set_arr_i32(sl_gguf_writer *w, const char *key, const int32_t *v, uint64_t n)
{
    sl_gguf_value x = {.type = SL_GGUF_ARRAY, .v.arr = {SL_GGUF_INT32, n, v}};
    return sl_gguf_writer_set_value(w, key, &x);
}

int sl_gguf_writer_set_arr_f32(sl_gguf_writer *w, const char *key, const float *v, uint64_t n)
{
    sl_gguf_value x = {.type = SL_GGUF_ARRAY, .v.arr = {SL_GGUF_FLOAT32, n, v}};
    return sl_gguf_writer_set_value(w, key, &x);
}

/* ---- tensors ------------------------------------------------------------- */

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

/* Returns the slot for name: holding its index + 1 if present, else 0. */
static uint64_t *hash_slot(sl_gguf_writer *w, const char *name, size_t len)
{
    uint64_t mask = w->hash_cap - 1;
    for (uint64_t i = name_hash(name, len) & mask;; i = (i + 1) & mask) {
        uint64_t *s = &w->hash[i];
        if (!*s) return s;
        const wtensor *t = &w->t[*s - 1];
        if (t->name_len == len && !memcmp(t->name, name, len)) return s;
    }
}

static bool hash_grow(sl_gguf_writer *w)
{
    uint64_t cap = w->hash_cap ? w->hash_cap * 2 : 256;
    uint64_t *h = calloc((size_t)cap, sizeof *h);
    if (!h) return false;
    free(w->hash);
    w->hash = h;
    w->hash_cap = cap;
    for (uint64_t i = 0; i < w->n_t; i++)
        *hash_slot(w, w->t[i].name, w->t[i].name_len) = i + 1;
    return true;
}

int sl_gguf_writer_add_tensor(sl_gguf_writer *w, const char *name, sl_type type,
                              uint32_t n_dims, const uint64_t *ne, sl_err *err)
{
    if (w->state == ST_FAILED) return report(w, err);
    if (!name || !*name) {
        wfail(w, SL_EINVAL, "tensor with an empty name");
        return report(w, err);
    }
    if (w->state != ST_DECLARE) {
        wfail(w, SL_EINVAL, "tensor '%s' declared after tensor data writing began", name);
        return report(w, err);
    }
    if (n_dims == 0 || n_dims > SL_GGUF_MAX_DIMS) {
        wfail(w, SL_EINVAL, "tensor '%s': n_dims %u is not in 1..%d", name, n_dims,
              SL_GGUF_MAX_DIMS);
        return report(w, err);
    }
    const sl_type_traits *tr = sl_type_get((uint32_t)type);
    if (!tr || tr->block_size == 0 || tr->type_size == 0) {
        wfail(w, SL_EINVAL, "tensor '%s': unknown type %d", name, (int)type);
        return report(w, err);
    }
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > INT64_MAX || !sl_mul_u64(n, ne[d], &n) || n > INT64_MAX) {
            wfail(w, SL_EINVAL, "tensor '%s': dimension %u = %llu is zero or overflows", name,
                  d, (ull)ne[d]);
            return report(w, err);
        }
    }
    if (ne[0] % tr->block_size) {
        wfail(w, SL_EINVAL, "tensor '%s': row length %llu is not a multiple of the %s block "
                            "size %u", name, (ull)ne[0], tr->name, tr->block_size);
        return report(w, err);
    }
    wtensor t = {.type = type, .n_dims = n_dims};
    if (!sl_type_nbytes((uint32_t)type, n, &t.nbytes)) {
        wfail(w, SL_EINVAL, "tensor '%s': byte size overflows", name);
        return report(w, err);
    }
    for (uint32_t d = 0; d < SL_GGUF_MAX_DIMS; d++) t.ne[d] = d < n_dims ? ne[d] : 1;
    t.name_len = strlen(name);

    if (2 * (w->n_t + 1) > w->hash_cap && !hash_grow(w)) {
        wfail(w, SL_ENOMEM, "out of memory declaring tensor '%s'", name);
        return report(w, err);
    }
    uint64_t *slot = hash_slot(w, name, t.name_len);
    if (*slot) {
        wfail(w, SL_EINVAL, "tensor '%s' declared twice", name);
        return report(w, err);
    }
    if (w->n_t == w->t_cap) {
        uint64_t cap = w->t_cap ? w->t_cap * 2 : 64;
        wtensor *nt = realloc(w->t, (size_t)cap * sizeof *nt);
        if (!nt) {
            wfail(w, SL_ENOMEM, "out of memory declaring tensor '%s'", name);
            return report(w, err);
        }
        w->t = nt;
        w->t_cap = cap;
    }
    t.name = malloc(t.name_len + 1);
    if (!t.name) {
        wfail(w, SL_ENOMEM, "out of memory declaring tensor '%s'", name);
        return report(w, err);
    }
    memcpy(t.name, name, t.name_len + 1);
    w->t[w->n_t++] = t;
    *slot = w->n_t;
    return SL_OK;
}

/* ---- output -------------------------------------------------------------- */

static int write_raw(sl_gguf_writer *w, const void *p, size_t n)
{
    sl_err e;
    int rc = sl_file_write_full(&w->out.f, p, n, &e);
    if (rc) {
        w->failure = e;
        w->state = ST_FAILED;
        return rc;
    }
    w->written += n;
    return SL_OK;
}

/* Writes the buffer now (full, or the last one at close). */
static int flush_last(sl_gguf_writer *w)
{
    if (!w->buf_len) return SL_OK;
    int rc0 = io_wait(w);
    if (rc0) return rc0;
    size_t head = w->buf_len;
    if (w->direct && head % SL_FILE_DIRECT_ALIGN) {
        /* the last, partial buffer: whole blocks directly, the tail as an
         * ordinary write (the file ends there, so nothing follows it) */
        head -= head % SL_FILE_DIRECT_ALIGN;
        if (head && write_raw(w, w->buf, head)) return w->failure.code;
        w->direct = false;
        if (!sl_file_set_direct(&w->out.f, false))
            return wfail(w, SL_EIO, "cannot leave direct I/O for the last %zu bytes",
                         w->buf_len - head);
    } else {
        head = 0;
    }
    int rc = write_raw(w, w->buf + head, w->buf_len - head);
    if (rc) return rc;
    w->buf_len = 0;
    return SL_OK;
}

/* A full buffer: to the background thread when there is one. */
static int flush_full(sl_gguf_writer *w)
{
    if (!w->io.on) return flush_last(w);
    int rc = io_wait(w);
    if (rc) return rc;
    pthread_mutex_lock(&w->io.mu);
    w->io.job = w->buf;
    w->io.job_len = w->buf_len;
    pthread_cond_broadcast(&w->io.cv);
    pthread_mutex_unlock(&w->io.mu);
    w->written += w->buf_len;
    uint8_t *t = w->buf;
    w->buf = w->buf2;
    w->buf2 = t;
    w->buf_len = 0;
    return SL_OK;
}

static int out(sl_gguf_writer *w, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        if (w->buf_len == 0 && n >= WRITE_BUF && !w->direct) {
            /* a big chunk goes straight to the OS, no copy */
            sl_err e;
            int rc = sl_file_write_full(&w->out.f, b, n, &e);
            if (rc) {
                w->failure = e;
                w->state = ST_FAILED;
                return rc;
            }
            w->written += n;
            return SL_OK;
        }
        size_t take = WRITE_BUF - w->buf_len;
        if (take > n) take = n;
        memcpy(w->buf + w->buf_len, b, take);
        w->buf_len += take;
        b += take;
        n -= take;
        if (w->buf_len == WRITE_BUF) {
            int rc = flush_full(w);
            if (rc) return rc;
        }
    }
    return SL_OK;
}

static int out_zeros(sl_gguf_writer *w, uint64_t n)
{
    static const uint8_t zeros[256];
    while (n) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        int rc = out(w, zeros, k);
        if (rc) return rc;
        n -= k;
    }
    return SL_OK;
}

static int out_uint(sl_gguf_writer *w, uint64_t v, unsigned n)
{
    uint8_t b[8];
    for (unsigned i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    return out(w, b, n);
}

static int write_header(sl_gguf_writer *w)
{
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        uint64_t end;
        if (!sl_add_u64(off, w->t[i].nbytes, &end) || !sl_align_up_u64(end, w->alignment, &off))
            return wfail(w, SL_EINVAL, "tensor data section size overflows 64 bits");
    }
    int rc;
    if ((rc = out(w, "GGUF", 4)) || (rc = out_uint(w, 3, 4)) || (rc = out_uint(w, w->n_t, 8)) ||
        (rc = out_uint(w, w->n_kv, 8)) || (rc = out(w, w->meta, w->meta_len)))
        return rc;
    for (uint64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if ((rc = out_uint(w, t->name_len, 8)) || (rc = out(w, t->name, t->name_len)) ||
            (rc = out_uint(w, t->n_dims, 4)))
            return rc;
        for (uint32_t d = 0; d < t->n_dims; d++)
            if ((rc = out_uint(w, t->ne[d], 8))) return rc;
        if ((rc = out_uint(w, (uint32_t)t->type, 4)) || (rc = out_uint(w, t->offset, 8)))
            return rc;
    }
    uint64_t pos = w->written + w->buf_len, aligned;
    if (!sl_align_up_u64(pos, w->alignment, &aligned))
        return wfail(w, SL_EINVAL, "header size overflows");
    w->state = ST_DATA;
    return out_zeros(w, aligned - pos);
}

int sl_gguf_writer_write(sl_gguf_writer *w, const void *bytes, size_t n, sl_err *err)
{
    if (w->state == ST_FAILED) return report(w, err);
    if (w->state == ST_DECLARE && write_header(w)) return report(w, err);
    const uint8_t *p = bytes;
    while (n) {
        if (w->cur >= w->n_t) {
            wfail(w, SL_EINVAL, "%zu bytes of tensor data beyond the %llu declared tensors", n,
                  (ull)w->n_t);
            return report(w, err);
        }
        wtensor *t = &w->t[w->cur];
        uint64_t room = t->nbytes - w->cur_done;
        size_t take = room < n ? (size_t)room : n;
        if (out(w, p, take)) return report(w, err);
        p += take;
        n -= take;
        w->cur_done += take;
        if (w->cur_done == t->nbytes) {
            uint64_t padded;
            sl_align_up_u64(t->nbytes, w->alignment, &padded); /* checked in write_header */
            if (out_zeros(w, padded - t->nbytes)) return report(w, err);
            w->cur++;
            w->cur_done = 0;
        }
    }
    return SL_OK;
}

int sl_gguf_writer_write_holes(sl_gguf_writer *w, sl_err *err)
{
    if (w->state == ST_FAILED) return report(w, err);
    if (w->state != ST_DECLARE) {
        wfail(w, SL_EINVAL, "tensor data as holes asked after data writing began");
        return report(w, err);
    }
    if (write_header(w) || flush_last(w) || io_wait(w)) return report(w, err);
    uint64_t end = w->written; /* the data section starts here (aligned) */
    if (w->n_t) {
        const wtensor *t = &w->t[w->n_t - 1];
        uint64_t padded;
        sl_align_up_u64(t->nbytes, w->alignment, &padded); /* checked in write_header */
        end += t->offset + padded;
    }
    if (end > (uint64_t)INT64_MAX || ftruncate(w->out.f.fd, (off_t)end) != 0) {
        wfail(w, SL_EIO, "cannot extend the file to %llu bytes: %s", (ull)end,
              strerror(errno));
        return report(w, err);
    }
    w->written = end;
    w->cur = w->n_t; /* every tensor's bytes are there (as zeros) */
    w->cur_done = 0;
    return SL_OK;
}

int sl_gguf_writer_close(sl_gguf_writer *w, sl_err *err)
{
    int rc = SL_OK;
    if (w->state == ST_DECLARE) write_header(w);
    if (w->state != ST_FAILED && w->cur < w->n_t)
        wfail(w, SL_EINVAL, "closed after %llu of %llu tensors were written (tensor '%s' has "
                            "%llu of %llu bytes)",
              (ull)w->cur, (ull)w->n_t, w->t[w->cur].name, (ull)w->cur_done,
              (ull)w->t[w->cur].nbytes);
    if (w->state != ST_FAILED) flush_last(w);
    io_wait(w);
    if (w->state == ST_FAILED) rc = report(w, err);
    /* a late write error (full disk) shows at sync or close: a file whose
     * close failed is not a complete model, and never takes the name */
    io_stop(w);
    if (!rc) rc = sl_out_commit(&w->out, err);
    sl_gguf_writer_abort(w);
    return rc;
}
