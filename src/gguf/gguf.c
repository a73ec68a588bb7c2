/* gguf.c - parsing and validation of one GGUF image (versions 2 and 3,
 * little-endian).
 *
 * Owns: the byte layout of a GGUF header and every rule a valid file obeys.
 * Must not know: models, architectures, what any key or tensor means (except
 * general.alignment, which the format itself defines).
 *
 *   offset 0   magic "GGUF"            u32
 *          4   version (2 or 3)        u32
 *          8   tensor_count            u64
 *         16   metadata_kv_count       u64
 *         24   kv pairs:    key (u64 len + bytes), value type u32, value
 *              tensor infos: name, n_dims u32, ne[n_dims] u64, type u32,
 *                            offset u64 (relative to the data section)
 *              padding to general.alignment (default 32)
 *              tensor data
 *
 * The bytes are read through a cursor that only ever asks for a range after
 * checking it against the file size with overflow-safe arithmetic. For files
 * the header is read with pread into a buffer that doubles as needed, so a
 * multi-MB vocabulary costs a few reads and nothing is mapped. Every count is
 * checked against the bytes that remain before anything is allocated for it,
 * and the per-element arrays grow as elements actually parse, so a hostile
 * count fails fast and cheaply. */
#include "gguf/gguf_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"

#define GGUF_MAGIC 0x46554747u /* "GGUF" read as a little-endian u32 */
#define FIRST_CHUNK ((uint64_t)1 << 20)

/* The smallest encodings, used to bound counts by the bytes left:
 * kv = key length (8) + a 1-byte key + value type (4) + a 1-byte value;
 * tensor info = name length (8) + 1-byte name + n_dims (4) + one dim (8) +
 * type (4) + offset (8). */
#define MIN_KV_BYTES 14u
#define MIN_TENSOR_INFO_BYTES 33u

/* Bytes of a scalar value of each type; 0 for string and array. */
static const uint8_t vtype_size[SL_GGUF_VTYPE_COUNT] = {
    [SL_GGUF_UINT8] = 1,   [SL_GGUF_INT8] = 1,    [SL_GGUF_UINT16] = 2,
    [SL_GGUF_INT16] = 2,   [SL_GGUF_UINT32] = 4,  [SL_GGUF_INT32] = 4,
    [SL_GGUF_FLOAT32] = 4, [SL_GGUF_BOOL] = 1,    [SL_GGUF_STRING] = 0,
    [SL_GGUF_ARRAY] = 0,   [SL_GGUF_UINT64] = 8,  [SL_GGUF_INT64] = 8,
    [SL_GGUF_FLOAT64] = 8,
};

typedef struct rd {
    const sl_gguf_src *src;
    const uint8_t *p; /* bytes [0, have) of the image */
    uint64_t have;
    uint64_t limit;   /* the header must end by here: min(size, MAX_HEADER) */
    uint64_t pos;
    uint8_t *buf;     /* owned growth buffer (file mode) */
    sl_gguf_arena *a;
    sl_err *err;
} rd;

typedef unsigned long long ull;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(rd *r, int code, const char *fmt, ...)
{
    char msg[SL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sl_err_set(r->err, code, "%s: %s", r->src->name, msg);
}

static int oom(rd *r, const char *what)
{
    return fail(r, SL_ENOMEM, "out of memory while reading %s", what);
}

/* Makes bytes [pos, pos + n) available in r->p, or explains why not. */
static int rd_need(rd *r, uint64_t n, const char *ctx, const char *field)
{
    uint64_t end;
    if (!sl_add_u64(r->pos, n, &end) || end > r->src->size)
        return fail(r, SL_EFORMAT,
                    "unexpected end of file: %s%s%s needs %llu bytes at byte offset %llu, "
                    "but the file has %llu bytes",
                    ctx, *ctx ? ": " : "", field, (ull)n, (ull)r->pos, (ull)r->src->size);
    if (end > r->limit)
        return fail(r, SL_EFORMAT,
                    "%s%s%s at byte offset %llu ends past the %llu MiB header limit", ctx,
                    *ctx ? ": " : "", field, (ull)r->pos, (ull)(SL_GGUF_MAX_HEADER >> 20));
    if (end <= r->have) return SL_OK;

    uint64_t cap = r->have ? r->have : FIRST_CHUNK;
    while (cap < end) cap *= 2; /* end <= limit <= 256 MiB: cannot overflow */
    if (cap > r->limit) cap = r->limit;
    uint8_t *nb = realloc(r->buf, (size_t)cap);
    if (!nb) return oom(r, "the file header");
    r->buf = nb;
    int rc = sl_file_pread_full(r->src->file, nb + r->have, (size_t)(cap - r->have), r->have,
                                r->err);
    if (rc) return rc;
    r->p = nb;
    r->have = cap;
    return SL_OK;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int rd_uint(rd *r, unsigned n, uint64_t *v, const char *ctx, const char *field)
{
    int rc = rd_need(r, n, ctx, field);
    if (rc) return rc;
    *v = le(r->p + r->pos, n);
    r->pos += n;
    return SL_OK;
}

static int rd_u32(rd *r, uint32_t *v, const char *ctx, const char *field)
{
    uint64_t x;
    int rc = rd_uint(r, 4, &x, ctx, field);
    if (!rc) *v = (uint32_t)x;
    return rc;
}

static int rd_u64(rd *r, uint64_t *v, const char *ctx, const char *field)
{
    return rd_uint(r, 8, v, ctx, field);
}

/* Explains a count or length that cannot fit in what is left of the header. */
static int too_big(rd *r, const char *ctx, const char *what, uint64_t count, uint64_t at,
                   uint64_t unit)
{
    uint64_t left = r->src->size - r->pos;
    char each[64] = "";
    if (unit > 1) snprintf(each, sizeof each, " (at least %llu bytes each)", (ull)unit);
    if (left > r->limit - r->pos)
        return fail(r, SL_EFORMAT,
                    "%s: %s %llu at byte offset %llu cannot fit in the %llu MiB header limit%s",
                    ctx, what, (ull)count, (ull)at, (ull)(SL_GGUF_MAX_HEADER >> 20), each);
    return fail(r, SL_EFORMAT,
                "%s: %s %llu at byte offset %llu exceeds what the %llu bytes left in the file "
                "could hold%s",
                ctx, what, (ull)count, (ull)at, (ull)left, each);
}

static int rd_str(rd *r, sl_gguf_str *s, const char *ctx, const char *field)
{
    uint64_t at = r->pos, len;
    int rc = rd_u64(r, &len, ctx, field);
    if (rc) return rc;
    if (len > r->limit - r->pos) {
        char what[96];
        snprintf(what, sizeof what, "%s length", field);
        return too_big(r, ctx, what, len, at, 1);
    }
    rc = rd_need(r, len, ctx, field);
    if (rc) return rc;
    char *p = sl_gguf_arena_alloc(r->a, len + 1);
    if (!p) return oom(r, ctx);
    if (len) memcpy(p, r->p + r->pos, (size_t)len);
    p[len] = '\0';
    r->pos += len;
    s->ptr = p;
    s->len = len;
    return SL_OK;
}

/* ---- growable arrays: memory follows what parsed, not what was claimed -- */

typedef struct vec {
    void *p;
    uint64_t n, cap;
    size_t esize;
} vec;

static void *vec_push(vec *v)
{
    if (v->n == v->cap) {
        uint64_t cap = v->cap ? v->cap * 2 : 64;
        uint64_t bytes;
        if (!sl_mul_u64(cap, v->esize, &bytes) || bytes > SIZE_MAX) return NULL;
        void *np = realloc(v->p, (size_t)bytes);
        if (!np) return NULL;
        v->p = np;
        v->cap = cap;
    }
    void *e = (char *)v->p + v->n * v->esize;
    memset(e, 0, v->esize);
    v->n++;
    return e;
}

/* Moves the contents into the arena (exact size) and frees the vector. */
static void *vec_finish(vec *v, sl_gguf_arena *a)
{
    void *dst = sl_gguf_arena_alloc(a, v->n * v->esize);
    if (dst && v->n) memcpy(dst, v->p, (size_t)(v->n * v->esize));
    free(v->p);
    v->p = NULL;
    return dst;
}

/* ---- values ---------------------------------------------------------------- */

static int parse_array(rd *r, sl_gguf_array *arr, const char *ctx, int depth);

static int parse_scalar(rd *r, sl_gguf_vtype t, sl_gguf_value *val, const char *ctx)
{
    uint64_t at = r->pos, x;
    unsigned n = vtype_size[t];
    int rc = rd_uint(r, n, &x, ctx, "value");
    if (rc) return rc;
    val->type = t;
    switch (t) {
    case SL_GGUF_UINT8: case SL_GGUF_UINT16: case SL_GGUF_UINT32: case SL_GGUF_UINT64:
        val->v.u64 = x;
        break;
    case SL_GGUF_INT8: val->v.i64 = (int8_t)(uint8_t)x; break;
    case SL_GGUF_INT16: val->v.i64 = (int16_t)(uint16_t)x; break;
    case SL_GGUF_INT32: val->v.i64 = (int32_t)(uint32_t)x; break;
    case SL_GGUF_INT64: val->v.i64 = (int64_t)x; break;
    case SL_GGUF_FLOAT32: {
        uint32_t b = (uint32_t)x;
        float f;
        memcpy(&f, &b, 4);
        val->v.f64 = f;
        break;
    }
    case SL_GGUF_FLOAT64: memcpy(&val->v.f64, &x, 8); break;
    case SL_GGUF_BOOL:
        if (x > 1)
            return fail(r, SL_EFORMAT, "%s: bool value %llu at byte offset %llu is not 0 or 1",
                        ctx, (ull)x, (ull)at);
        val->v.b = x != 0;
        break;
    default: SL_ASSERT(0);
    }
    return SL_OK;
}

static int parse_value(rd *r, uint32_t t, uint64_t type_at, sl_gguf_value *val,
                       const char *ctx)
{
    if (t >= SL_GGUF_VTYPE_COUNT)
        return fail(r, SL_EFORMAT, "%s: unknown value type %u at byte offset %llu", ctx, t,
                    (ull)type_at);
    if (t == SL_GGUF_STRING) {
        val->type = SL_GGUF_STRING;
        return rd_str(r, &val->v.str, ctx, "string");
    }
    if (t == SL_GGUF_ARRAY) {
        val->type = SL_GGUF_ARRAY;
        return parse_array(r, &val->v.arr, ctx, 1);
    }
    return parse_scalar(r, (sl_gguf_vtype)t, val, ctx);
}

static int parse_array(rd *r, sl_gguf_array *arr, const char *ctx, int depth)
{
    uint64_t type_at = r->pos;
    uint32_t et;
    int rc = rd_u32(r, &et, ctx, "array element type");
    if (rc) return rc;
    if (et >= SL_GGUF_VTYPE_COUNT)
        return fail(r, SL_EFORMAT, "%s: unknown array element type %u at byte offset %llu", ctx,
                    et, (ull)type_at);
    if (et == SL_GGUF_ARRAY && depth >= SL_GGUF_MAX_ARRAY_DEPTH)
        return fail(r, SL_EFORMAT,
                    "%s: arrays nested more than %d deep at byte offset %llu", ctx,
                    SL_GGUF_MAX_ARRAY_DEPTH, (ull)type_at);
    uint64_t count_at = r->pos, n;
    rc = rd_u64(r, &n, ctx, "array length");
    if (rc) return rc;
    /* element type u32 + count u64 = 12 bytes for a nested array */
    uint64_t unit = et == SL_GGUF_STRING ? 8 : et == SL_GGUF_ARRAY ? 12 : vtype_size[et];
    if (n > (r->limit - r->pos) / unit) {
        char what[64];
        snprintf(what, sizeof what, "array length (%s elements)",
                 sl_gguf_vtype_name((sl_gguf_vtype)et));
        return too_big(r, ctx, what, n, count_at, unit);
    }
    arr->type = (sl_gguf_vtype)et;
    arr->n = n;

    if (et != SL_GGUF_STRING && et != SL_GGUF_ARRAY) {
        uint64_t bytes = n * unit; /* cannot overflow: checked against limit */
        rc = rd_need(r, bytes, ctx, "array data");
        if (rc) return rc;
        const uint8_t *src = r->p + r->pos;
        if (et == SL_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (src[i] > 1)
                    return fail(r, SL_EFORMAT,
                                "%s: bool element %llu = %u at byte offset %llu is not 0 or 1",
                                ctx, (ull)i, src[i], (ull)(r->pos + i));
        void *dst = sl_gguf_arena_alloc(r->a, bytes);
        if (!dst) return oom(r, ctx);
        if (bytes) memcpy(dst, src, (size_t)bytes);
        arr->data = dst;
        r->pos += bytes;
        return SL_OK;
    }

    vec v = {.esize = et == SL_GGUF_STRING ? sizeof(sl_gguf_str) : sizeof(sl_gguf_value)};
    for (uint64_t i = 0; i < n; i++) {
        void *e = vec_push(&v);
        if (!e) {
            free(v.p);
            return oom(r, ctx);
        }
        if (et == SL_GGUF_STRING) {
            rc = rd_str(r, e, ctx, "array string");
        } else {
            sl_gguf_value *ev = e;
            ev->type = SL_GGUF_ARRAY;
            rc = parse_array(r, &ev->v.arr, ctx, depth + 1);
        }
        if (rc) {
            free(v.p);
            return rc;
        }
    }
    arr->data = vec_finish(&v, r->a);
    if (!arr->data) return oom(r, ctx);
    return SL_OK;
}

/* ---- header ------------------------------------------------------------- */

static int parse_kvs(rd *r, uint64_t n_kv, sl_gguf_image *img)
{
    vec v = {.esize = sizeof(sl_gguf_kv)};
    int rc = SL_OK;
    for (uint64_t i = 0; i < n_kv; i++) {
        sl_gguf_kv *kv = vec_push(&v);
        if (!kv) {
            rc = oom(r, "metadata");
            goto err;
        }
        kv->file_offset = r->pos;
        char ctx[192];
        snprintf(ctx, sizeof ctx, "metadata pair %llu", (ull)i);
        rc = rd_str(r, &kv->key, ctx, "key");
        if (rc) goto err;
        if (kv->key.len == 0) {
            rc = fail(r, SL_EFORMAT, "metadata pair %llu at byte offset %llu has an empty key",
                      (ull)i, (ull)kv->file_offset);
            goto err;
        }
        char show[128];
        snprintf(ctx, sizeof ctx, "metadata '%s'",
                 sl_gguf_str_show(show, sizeof show, &kv->key));
        uint64_t type_at = r->pos;
        uint32_t t;
        rc = rd_u32(r, &t, ctx, "value type");
        if (rc) goto err;
        rc = parse_value(r, t, type_at, &kv->value, ctx);
        if (rc) goto err;
    }
    img->n_kv = n_kv;
    img->kvs = vec_finish(&v, r->a);
    if (!img->kvs) return oom(r, "metadata");
    return SL_OK;
err:
    free(v.p);
    return rc;
}

/* general.alignment: any integer type holding a non-zero power of two that
 * fits in 32 bits (the spec says uint32). */
static int read_alignment(rd *r, sl_gguf_image *img)
{
    img->alignment = SL_GGUF_DEFAULT_ALIGNMENT;
    const sl_gguf_kv *kv = sl_gguf_index_find_kv(img->kv_index, img->n_kv, "general.alignment");
    if (!kv) return SL_OK;
    const sl_gguf_value *v = &kv->value;
    uint64_t a;
    switch (v->type) {
    case SL_GGUF_UINT8: case SL_GGUF_UINT16: case SL_GGUF_UINT32: case SL_GGUF_UINT64:
        a = v->v.u64;
        break;
    case SL_GGUF_INT8: case SL_GGUF_INT16: case SL_GGUF_INT32: case SL_GGUF_INT64:
        if (v->v.i64 < 0)
            return fail(r, SL_EFORMAT,
                        "general.alignment at byte offset %llu: value %lld is not a non-zero "
                        "power of two",
                        (ull)kv->file_offset, (long long)v->v.i64);
        a = (uint64_t)v->v.i64;
        break;
    default:
        return fail(r, SL_EFORMAT,
                    "general.alignment at byte offset %llu has type %s, expected uint32",
                    (ull)kv->file_offset, sl_gguf_vtype_name(v->type));
    }
    if (a == 0 || (a & (a - 1)) || a > UINT32_MAX)
        return fail(r, SL_EFORMAT,
                    "general.alignment at byte offset %llu: value %llu is not a non-zero "
                    "power of two (at most 2^31)",
                    (ull)kv->file_offset, (ull)a);
    img->alignment = a;
    return SL_OK;
}

static int parse_tensor_info(rd *r, uint64_t i, uint64_t alignment, sl_gguf_tensor *t,
                             uint64_t *info_off)
{
    char ctx[192], show[128];
    *info_off = r->pos;
    snprintf(ctx, sizeof ctx, "tensor info %llu", (ull)i);
    int rc = rd_str(r, &t->name, ctx, "name");
    if (rc) return rc;
    if (t->name.len == 0)
        return fail(r, SL_EFORMAT, "tensor info %llu at byte offset %llu has an empty name",
                    (ull)i, (ull)*info_off);
    snprintf(ctx, sizeof ctx, "tensor '%s'", sl_gguf_str_show(show, sizeof show, &t->name));

    uint64_t at = r->pos;
    rc = rd_u32(r, &t->n_dims, ctx, "n_dims");
    if (rc) return rc;
    if (t->n_dims == 0 || t->n_dims > SL_GGUF_MAX_DIMS)
        return fail(r, SL_EFORMAT, "%s: n_dims %u at byte offset %llu is not in 1..%d", ctx,
                    t->n_dims, (ull)at, SL_GGUF_MAX_DIMS);
    uint64_t ne_at = r->pos;
    for (uint32_t d = 0; d < SL_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        at = r->pos;
        rc = rd_u64(r, &t->ne[d], ctx, "dimension");
        if (rc) return rc;
        if (t->ne[d] == 0)
            return fail(r, SL_EFORMAT, "%s: dimension %u is zero at byte offset %llu", ctx, d,
                        (ull)at);
        if (t->ne[d] > INT64_MAX)
            return fail(r, SL_EFORMAT,
                        "%s: dimension %u = %llu at byte offset %llu exceeds 2^63-1", ctx, d,
                        (ull)t->ne[d], (ull)at);
    }
    uint64_t ne = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (!sl_mul_u64(ne, t->ne[d], &ne) || ne > INT64_MAX)
            return fail(r, SL_EFORMAT,
                        "%s: element count of shape [%llu, %llu, %llu, %llu] at byte offset "
                        "%llu overflows 63 bits",
                        ctx, (ull)t->ne[0], (ull)t->ne[1], (ull)t->ne[2], (ull)t->ne[3],
                        (ull)ne_at);
    }
    t->n_elements = ne;

    at = r->pos;
    uint32_t type;
    rc = rd_u32(r, &type, ctx, "type");
    if (rc) return rc;
    const sl_type_traits *tr = sl_type_get(type);
    if (!tr || tr->block_size == 0 || tr->type_size == 0)
        return fail(r, SL_EFORMAT, "%s: unknown tensor type %u at byte offset %llu", ctx, type,
                    (ull)at);
    t->type = (sl_type)type;
    if (t->ne[0] % tr->block_size)
        return fail(r, SL_EFORMAT,
                    "%s: row length ne[0] = %llu is not a multiple of the %s block size %u "
                    "(tensor info at byte offset %llu)",
                    ctx, (ull)t->ne[0], tr->name, tr->block_size, (ull)*info_off);
    if (!sl_type_nbytes(type, ne, &t->nbytes))
        return fail(r, SL_EFORMAT,
                    "%s: byte size of %llu %s elements overflows (tensor info at byte offset "
                    "%llu)",
                    ctx, (ull)ne, tr->name, (ull)*info_off);

    at = r->pos;
    rc = rd_u64(r, &t->offset, ctx, "data offset");
    if (rc) return rc;
    if (t->offset % alignment)
        return fail(r, SL_EFORMAT,
                    "%s: data offset %llu at byte offset %llu is not a multiple of the "
                    "alignment %llu",
                    ctx, (ull)t->offset, (ull)at, (ull)alignment);
    return SL_OK;
}

static int by_offset(const void *x, const void *y)
{
    const sl_gguf_tensor *a = *(const sl_gguf_tensor *const *)x;
    const sl_gguf_tensor *b = *(const sl_gguf_tensor *const *)y;
    if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Turns relative offsets into absolute ones and checks that every tensor's
 * bytes lie inside the file and that no two tensors share a byte. */
static int place_tensors(rd *r, sl_gguf_image *img)
{
    char show[128], show2[128];
    for (uint64_t i = 0; i < img->n_tensors; i++) {
        sl_gguf_tensor *t = &img->tensors[i];
        uint64_t abs, end;
        if (!sl_add_u64(img->data_offset, t->offset, &abs) || !sl_add_u64(abs, t->nbytes, &end))
            return fail(r, SL_EFORMAT,
                        "tensor '%s': data offset %llu + %llu bytes overflows 64 bits "
                        "(tensor info at byte offset %llu)",
                        sl_gguf_str_show(show, sizeof show, &t->name), (ull)t->offset,
                        (ull)t->nbytes, (ull)img->tensor_info_off[i]);
        if (end > r->src->size)
            return fail(r, SL_EFORMAT,
                        "tensor '%s': data [%llu, %llu) lies past end of file (%llu bytes)",
                        sl_gguf_str_show(show, sizeof show, &t->name), (ull)abs, (ull)end,
                        (ull)r->src->size);
        t->offset = abs;
    }
    if (img->n_tensors < 2) return SL_OK;
    const sl_gguf_tensor **s = malloc((size_t)img->n_tensors * sizeof *s);
    if (!s) return oom(r, "tensor infos");
    for (uint64_t i = 0; i < img->n_tensors; i++) s[i] = &img->tensors[i];
    qsort(s, (size_t)img->n_tensors, sizeof *s, by_offset);
    int rc = SL_OK;
    for (uint64_t i = 1; i < img->n_tensors; i++) {
        const sl_gguf_tensor *a = s[i - 1], *b = s[i];
        if (a->offset + a->nbytes > b->offset) {
            rc = fail(r, SL_EFORMAT,
                      "tensor '%s': data [%llu, %llu) overlaps tensor '%s' data [%llu, %llu)",
                      sl_gguf_str_show(show, sizeof show, &b->name), (ull)b->offset,
                      (ull)(b->offset + b->nbytes),
                      sl_gguf_str_show(show2, sizeof show2, &a->name), (ull)a->offset,
                      (ull)(a->offset + a->nbytes));
            break;
        }
    }
    free(s);
    return rc;
}

static int parse_header(rd *r, uint32_t file_index, sl_gguf_image *img)
{
    uint64_t magic, version, n_tensors, n_kv;
    int rc;
    if ((rc = rd_uint(r, 4, &magic, "header", "magic"))) return rc;
    if (magic != GGUF_MAGIC)
        return fail(r, SL_EFORMAT,
                    "bad magic 0x%08llx at byte offset 0 (expected 0x%08x, \"GGUF\"): not a "
                    "GGUF file",
                    (ull)magic, GGUF_MAGIC);
    if ((rc = rd_uint(r, 4, &version, "header", "version"))) return rc;
    if (version == 1)
        return fail(r, SL_EFORMAT,
                    "unsupported GGUF version 1 at byte offset 4 (sluice reads versions 2 and "
                    "3; re-convert the model with a current llama.cpp)");
    if (version != 2 && version != 3) {
        if ((version & 0xffff) == 0)
            return fail(r, SL_EFORMAT,
                        "unsupported GGUF version field 0x%08llx at byte offset 4: this looks "
                        "like a big-endian file, and sluice reads little-endian files only",
                        (ull)version);
        return fail(r, SL_EFORMAT,
                    "unsupported GGUF version %llu at byte offset 4 (sluice reads versions 2 "
                    "and 3)",
                    (ull)version);
    }
    img->version = (uint32_t)version;
    if ((rc = rd_u64(r, &n_tensors, "header", "tensor count"))) return rc;
    if ((rc = rd_u64(r, &n_kv, "header", "metadata kv count"))) return rc;
    if (n_kv > (r->limit - r->pos) / MIN_KV_BYTES)
        return too_big(r, "header", "metadata kv count", n_kv, 16, MIN_KV_BYTES);
    if (n_tensors > (r->limit - r->pos) / MIN_TENSOR_INFO_BYTES)
        return too_big(r, "header", "tensor count", n_tensors, 8, MIN_TENSOR_INFO_BYTES);

    if ((rc = parse_kvs(r, n_kv, img))) return rc;
    if ((rc = sl_gguf_index_kvs(r->a, img->kvs, img->n_kv, &img->kv_index, r->src->name,
                                r->err)))
        return rc;
    if ((rc = read_alignment(r, img))) return rc;

    vec tv = {.esize = sizeof(sl_gguf_tensor)};
    vec ov = {.esize = sizeof(uint64_t)};
    rc = SL_OK;
    for (uint64_t i = 0; i < n_tensors && !rc; i++) {
        sl_gguf_tensor *t = vec_push(&tv);
        uint64_t *off = vec_push(&ov);
        if (!t || !off) {
            rc = oom(r, "tensor infos");
            break;
        }
        t->file_index = file_index;
        rc = parse_tensor_info(r, i, img->alignment, t, off);
    }
    if (rc) {
        free(tv.p);
        free(ov.p);
        return rc;
    }
    img->n_tensors = n_tensors;
    img->tensors = vec_finish(&tv, r->a);
    img->tensor_info_off = vec_finish(&ov, r->a);
    if (!img->tensors || !img->tensor_info_off) return oom(r, "tensor infos");

    if (!sl_align_up_u64(r->pos, img->alignment, &img->data_offset))
        return fail(r, SL_EFORMAT, "data section offset overflows");
    if ((rc = place_tensors(r, img))) return rc;
    return sl_gguf_index_tensors(r->a, img->tensors, img->n_tensors, img->tensor_info_off,
                                 &img->tensor_index, r->src->name, r->err);
}

int sl_gguf_parse_image(sl_gguf_arena *a, const sl_gguf_src *src, uint32_t file_index,
                        sl_gguf_image *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    rd r = {.src = src, .a = a, .err = err};
    r.limit = src->size < SL_GGUF_MAX_HEADER ? src->size : SL_GGUF_MAX_HEADER;
    if (src->mem) {
        r.p = src->mem;
        r.have = src->size;
    }
    int rc = parse_header(&r, file_index, out);
    free(r.buf);
    return rc;
}

const char *sl_gguf_vtype_name(sl_gguf_vtype t)
{
    static const char *const names[SL_GGUF_VTYPE_COUNT] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
        "bool", "string", "array", "uint64", "int64", "float64",
    };
    if ((unsigned)t >= SL_GGUF_VTYPE_COUNT) return "unknown";
    return names[t];
}
