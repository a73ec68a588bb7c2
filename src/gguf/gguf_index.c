/* gguf_index.c - the reader's bookkeeping: the bump arena, the sorted
 * indexes that find keys and tensor names (and catch duplicates), and the
 * escaping of names for messages. Knows the in-memory structures only, not
 * the file format. */
#include "gguf/gguf_internal.h"
#include "util/checked.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK ((uint64_t)64 << 10)

struct sl_gguf_arena_blk {
    sl_gguf_arena_blk *next;
    uint64_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

void *sl_gguf_arena_alloc(sl_gguf_arena *a, uint64_t n)
{
    const uint64_t al = alignof(max_align_t);
    uint64_t need;
    if (!sl_align_up_u64(n ? n : 1, al, &need)) return NULL;
    sl_gguf_arena_blk *b = a->head;
    if (!b || b->cap - b->used < need) {
        /* Large requests get a block of their own so they waste nothing. */
        uint64_t cap = need > ARENA_BLOCK / 4 ? need : ARENA_BLOCK;
        if (cap > SIZE_MAX - sizeof *b) return NULL;
        sl_gguf_arena_blk *nb = calloc(1, sizeof *nb + (size_t)cap);
        if (!nb) return NULL;
        nb->cap = cap;
        if (need > ARENA_BLOCK / 4 && b) {
            /* keep filling the current small block: chain the big one behind */
            nb->next = b->next;
            b->next = nb;
            nb->used = need;
            return nb->data;
        }
        nb->next = b;
        a->head = b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    return p;
}

void sl_gguf_arena_free(sl_gguf_arena *a)
{
    sl_gguf_arena_blk *b = a->head;
    while (b) {
        sl_gguf_arena_blk *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

const char *sl_gguf_str_show(char *buf, size_t cap, const sl_gguf_str *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    const size_t max_shown = 96;
    if (cap < 8) {
        if (cap) buf[0] = '\0';
        return buf;
    }
    for (uint64_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->ptr[i];
        if (i >= max_shown || o + 8 >= cap) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o] = '\0';
    return buf;
}

static int str_cmp(const sl_gguf_str *a, const sl_gguf_str *b)
{
    uint64_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, (size_t)n) : 0;
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

static int kv_cmp(const void *x, const void *y)
{
    const sl_gguf_kv *a = *(const sl_gguf_kv *const *)x;
    const sl_gguf_kv *b = *(const sl_gguf_kv *const *)y;
    int c = str_cmp(&a->key, &b->key);
    if (c) return c;
    /* file order among equals, so a duplicate is reported at its 2nd place */
    return a->file_offset < b->file_offset ? -1 : a->file_offset > b->file_offset;
}

static int tensor_cmp(const void *x, const void *y)
{
    const sl_gguf_tensor *a = *(const sl_gguf_tensor *const *)x;
    const sl_gguf_tensor *b = *(const sl_gguf_tensor *const *)y;
    int c = str_cmp(&a->name, &b->name);
    if (c) return c;
    return a < b ? -1 : a > b; /* array order = file order */
}

int sl_gguf_index_kvs(sl_gguf_arena *a, const sl_gguf_kv *kvs, uint64_t n,
                      const sl_gguf_kv ***out, const char *name, sl_err *err)
{
    uint64_t bytes;
    if (!sl_mul_u64(n, sizeof(void *), &bytes))
        return sl_err_set(err, SL_ENOMEM, "%s: metadata index size overflows", name);
    const sl_gguf_kv **idx = sl_gguf_arena_alloc(a, bytes);
    if (!idx) return sl_err_set(err, SL_ENOMEM, "%s: out of memory indexing metadata", name);
    for (uint64_t i = 0; i < n; i++) idx[i] = &kvs[i];
    if (n > 1) qsort(idx, (size_t)n, sizeof *idx, kv_cmp);
    for (uint64_t i = 1; i < n; i++) {
        if (str_cmp(&idx[i - 1]->key, &idx[i]->key) == 0) {
            char show[128];
            return sl_err_set(err, SL_EFORMAT,
                              "%s: duplicate metadata key '%s' at byte offsets %llu and %llu",
                              name, sl_gguf_str_show(show, sizeof show, &idx[i]->key),
                              (unsigned long long)idx[i - 1]->file_offset,
                              (unsigned long long)idx[i]->file_offset);
        }
    }
    *out = idx;
    return SL_OK;
}

int sl_gguf_index_tensors(sl_gguf_arena *a, const sl_gguf_tensor *t, uint64_t n,
                          const uint64_t *info_off, const sl_gguf_tensor ***out,
                          const char *name, sl_err *err)
{
    uint64_t bytes;
    if (!sl_mul_u64(n, sizeof(void *), &bytes))
        return sl_err_set(err, SL_ENOMEM, "%s: tensor index size overflows", name);
    const sl_gguf_tensor **idx = sl_gguf_arena_alloc(a, bytes);
    if (!idx) return sl_err_set(err, SL_ENOMEM, "%s: out of memory indexing tensors", name);
    for (uint64_t i = 0; i < n; i++) idx[i] = &t[i];
    if (n > 1) qsort(idx, (size_t)n, sizeof *idx, tensor_cmp);
    for (uint64_t i = 1; i < n; i++) {
        if (str_cmp(&idx[i - 1]->name, &idx[i]->name) != 0) continue;
        char show[128];
        sl_gguf_str_show(show, sizeof show, &idx[i]->name);
        if (info_off)
            return sl_err_set(err, SL_EFORMAT,
                              "%s: duplicate tensor name '%s' (tensor infos at byte offsets "
                              "%llu and %llu)",
                              name, show, (unsigned long long)info_off[idx[i - 1] - t],
                              (unsigned long long)info_off[idx[i] - t]);
        return sl_err_set(err, SL_EFORMAT,
                          "%s: duplicate tensor name '%s' (in split parts %u and %u)", name,
                          show, idx[i - 1]->file_index + 1, idx[i]->file_index + 1);
    }
    *out = idx;
    return SL_OK;
}

static int key_cmp_c(const sl_gguf_str *s, const char *key, size_t klen)
{
    sl_gguf_str k = {key, klen};
    return str_cmp(s, &k);
}

const sl_gguf_kv *sl_gguf_index_find_kv(const sl_gguf_kv *const *idx, uint64_t n,
                                        const char *key)
{
    if (!idx || !key) return NULL;
    size_t klen = strlen(key);
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = key_cmp_c(&idx[mid]->key, key, klen);
        if (c == 0) return idx[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const sl_gguf_tensor *sl_gguf_index_find_tensor(const sl_gguf_tensor *const *idx,
                                                uint64_t n, const char *name)
{
    if (!idx || !name) return NULL;
    size_t klen = strlen(name);
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = key_cmp_c(&idx[mid]->name, name, klen);
        if (c == 0) return idx[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}
