/* gguf_get.c - read-only accessors over a parsed GGUF handle: metadata by
 * position or key, typed getters with range-checked conversions, array
 * elements, tensors, files. Knows the in-memory structures only. */
#include "gguf/gguf_internal.h"

#include <limits.h>
#include <math.h>
#include <string.h>

uint32_t sl_gguf_version(const sl_gguf *g) { return g->version; }
uint64_t sl_gguf_alignment(const sl_gguf *g) { return g->alignment; }
uint64_t sl_gguf_kv_count(const sl_gguf *g) { return g->n_kv; }

const sl_gguf_kv *sl_gguf_kv_at(const sl_gguf *g, uint64_t i)
{
    return i < g->n_kv ? &g->kvs[i] : NULL;
}

const sl_gguf_kv *sl_gguf_find(const sl_gguf *g, const char *key)
{
    return sl_gguf_index_find_kv(g->kv_index, g->n_kv, key);
}

/* Integer value of v widened to a sign/magnitude pair; false if v is not an
 * integer. */
static bool value_int(const sl_gguf_value *v, bool *neg, uint64_t *mag)
{
    switch (v->type) {
    case SL_GGUF_UINT8: case SL_GGUF_UINT16: case SL_GGUF_UINT32: case SL_GGUF_UINT64:
        *neg = false;
        *mag = v->v.u64;
        return true;
    case SL_GGUF_INT8: case SL_GGUF_INT16: case SL_GGUF_INT32: case SL_GGUF_INT64:
        *neg = v->v.i64 < 0;
        /* two's complement magnitude without overflow on INT64_MIN */
        *mag = *neg ? (uint64_t)0 - (uint64_t)v->v.i64 : (uint64_t)v->v.i64;
        return true;
    default: return false;
    }
}

bool sl_gguf_get_u64(const sl_gguf *g, const char *key, uint64_t *out)
{
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    bool neg;
    uint64_t m;
    if (!kv || !value_int(&kv->value, &neg, &m) || neg) return false;
    *out = m;
    return true;
}

bool sl_gguf_get_u32(const sl_gguf *g, const char *key, uint32_t *out)
{
    uint64_t v;
    if (!sl_gguf_get_u64(g, key, &v) || v > UINT32_MAX) return false;
    *out = (uint32_t)v;
    return true;
}

bool sl_gguf_get_i32(const sl_gguf *g, const char *key, int32_t *out)
{
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    bool neg;
    uint64_t m;
    if (!kv || !value_int(&kv->value, &neg, &m)) return false;
    if (neg ? m > (uint64_t)INT32_MAX + 1 : m > INT32_MAX) return false;
    *out = neg ? (int32_t)(-(int64_t)m) : (int32_t)m;
    return true;
}

bool sl_gguf_get_f32(const sl_gguf *g, const char *key, float *out)
{
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv || (kv->value.type != SL_GGUF_FLOAT32 && kv->value.type != SL_GGUF_FLOAT64))
        return false;
    *out = (float)kv->value.v.f64;
    return true;
}

bool sl_gguf_get_bool(const sl_gguf *g, const char *key, bool *out)
{
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv || kv->value.type != SL_GGUF_BOOL) return false;
    *out = kv->value.v.b;
    return true;
}

const char *sl_gguf_get_str(const sl_gguf *g, const char *key)
{
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv || kv->value.type != SL_GGUF_STRING) return NULL;
    return kv->value.v.str.ptr;
}

const sl_gguf_array *sl_gguf_get_arr(const sl_gguf *g, const char *key)
{
    const sl_gguf_kv *kv = sl_gguf_find(g, key);
    if (!kv || kv->value.type != SL_GGUF_ARRAY) return NULL;
    return &kv->value.v.arr;
}

/* Loads element i of a packed numeric array as the widened value. */
static bool arr_elem(const sl_gguf_array *a, uint64_t i, sl_gguf_value *v)
{
    if (!a || i >= a->n) return false;
    const uint8_t *p = a->data;
    uint8_t b1;
    uint16_t b2;
    uint32_t b4;
    uint64_t b8;
    v->type = a->type;
    switch (a->type) {
    case SL_GGUF_UINT8: memcpy(&b1, p + i, 1); v->v.u64 = b1; return true;
    case SL_GGUF_INT8: memcpy(&b1, p + i, 1); v->v.i64 = (int8_t)b1; return true;
    case SL_GGUF_BOOL: memcpy(&b1, p + i, 1); v->v.u64 = b1; v->type = SL_GGUF_UINT8; return true;
    case SL_GGUF_UINT16: memcpy(&b2, p + 2 * i, 2); v->v.u64 = b2; return true;
    case SL_GGUF_INT16: memcpy(&b2, p + 2 * i, 2); v->v.i64 = (int16_t)b2; return true;
    case SL_GGUF_UINT32: memcpy(&b4, p + 4 * i, 4); v->v.u64 = b4; return true;
    case SL_GGUF_INT32: memcpy(&b4, p + 4 * i, 4); v->v.i64 = (int32_t)b4; return true;
    case SL_GGUF_UINT64: memcpy(&b8, p + 8 * i, 8); v->v.u64 = b8; return true;
    case SL_GGUF_INT64: memcpy(&b8, p + 8 * i, 8); v->v.i64 = (int64_t)b8; return true;
    case SL_GGUF_FLOAT32: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        v->v.f64 = f;
        return true;
    }
    case SL_GGUF_FLOAT64: memcpy(&v->v.f64, p + 8 * i, 8); return true;
    default: return false;
    }
}

bool sl_gguf_arr_f64(const sl_gguf_array *a, uint64_t i, double *out)
{
    sl_gguf_value v;
    if (!arr_elem(a, i, &v)) return false;
    bool neg;
    uint64_t m;
    if (value_int(&v, &neg, &m)) {
        *out = neg ? (double)v.v.i64 : (double)m;
        return true;
    }
    *out = v.v.f64;
    return true;
}

/* Integer element types only (bool counts as 0/1); floats return false. */
bool sl_gguf_arr_i64(const sl_gguf_array *a, uint64_t i, int64_t *out)
{
    sl_gguf_value v;
    bool neg;
    uint64_t m;
    if (!arr_elem(a, i, &v) || !value_int(&v, &neg, &m)) return false;
    if (!neg && m > INT64_MAX) return false;
    *out = neg ? v.v.i64 : (int64_t)m;
    return true;
}

const sl_gguf_str *sl_gguf_arr_str(const sl_gguf_array *a, uint64_t i)
{
    if (!a || a->type != SL_GGUF_STRING || i >= a->n) return NULL;
    return &((const sl_gguf_str *)a->data)[i];
}

uint64_t sl_gguf_tensor_count(const sl_gguf *g) { return g->n_tensors; }

const sl_gguf_tensor *sl_gguf_tensor_at(const sl_gguf *g, uint64_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const sl_gguf_tensor *sl_gguf_find_tensor(const sl_gguf *g, const char *name)
{
    return sl_gguf_index_find_tensor(g->tensor_index, g->n_tensors, name);
}

uint32_t sl_gguf_file_count(const sl_gguf *g) { return g->n_parts; }

const char *sl_gguf_file_path(const sl_gguf *g, uint32_t i)
{
    return i < g->n_parts ? g->parts[i].path : NULL;
}

uint64_t sl_gguf_file_size(const sl_gguf *g, uint32_t i)
{
    return i < g->n_parts ? g->parts[i].size : 0;
}

uint64_t sl_gguf_data_offset(const sl_gguf *g, uint32_t i)
{
    return i < g->n_parts ? g->parts[i].data_offset : 0;
}
