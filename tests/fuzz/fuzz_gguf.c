/* fuzz_gguf.c - libFuzzer target for the GGUF reader.
 *
 * Parses the input as an in-memory GGUF image and, when it is accepted,
 * walks every accessor the rest of sluice uses: each key by position and by
 * lookup, every typed getter on every key, every element of every array
 * (nested ones recursively), every tensor by position and by name, and reads
 * of each tensor's bytes. Sanitizers turn any out-of-bounds access, leak or
 * undefined behaviour into a finding; the asserts below catch broken
 * invariants that the reader promises (data inside the image, aligned). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

#define FUZZ_CHECK(c)                                                          \
    do {                                                                       \
        if (!(c)) abort();                                                     \
    } while (0)

static volatile uint64_t sink;

static void walk_array(const sl_gguf_array *a, int depth)
{
    FUZZ_CHECK(depth <= 8);
    for (uint64_t i = 0; i <= a->n && i < 4096; i++) {
        double d;
        int64_t x;
        bool okf = sl_gguf_arr_f64(a, i, &d);
        bool oki = sl_gguf_arr_i64(a, i, &x);
        const sl_gguf_str *s = sl_gguf_arr_str(a, i);
        if (i == a->n) {
            /* one past the end is refused */
            FUZZ_CHECK(!okf && !oki && !s);
            break;
        }
        if (okf) sink += (uint64_t)(d == d);
        if (oki) sink += (uint64_t)x;
        if (s) {
            FUZZ_CHECK(s->ptr[s->len] == '\0');
            sink += s->len ? (uint8_t)s->ptr[s->len - 1] : 0;
        }
        if (a->type == SL_GGUF_ARRAY) {
            const sl_gguf_value *v = &((const sl_gguf_value *)a->data)[i];
            FUZZ_CHECK(v->type == SL_GGUF_ARRAY);
            walk_array(&v->v.arr, depth + 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sl_gguf *g = NULL;
    sl_err err = {0};
    if (sl_gguf_open_memory(&g, data, size, &err) != SL_OK) {
        FUZZ_CHECK(g == NULL && err.code != SL_OK && err.msg[0]);
        FUZZ_CHECK(memchr(err.msg, '\0', sizeof err.msg) != NULL);
        return 0;
    }
    FUZZ_CHECK(sl_gguf_version(g) == 2 || sl_gguf_version(g) == 3);
    uint64_t align = sl_gguf_alignment(g);
    FUZZ_CHECK(align && !(align & (align - 1)));
    FUZZ_CHECK(sl_gguf_file_count(g) == 1);
    FUZZ_CHECK(sl_gguf_file_size(g, 0) == size);
    FUZZ_CHECK(sl_gguf_data_offset(g, 0) % align == 0);
    sink += (uint64_t)(sl_gguf_file_path(g, 0) != NULL);

    for (uint64_t i = 0; i < sl_gguf_kv_count(g); i++) {
        const sl_gguf_kv *kv = sl_gguf_kv_at(g, i);
        FUZZ_CHECK(kv && kv->file_offset < size);
        const char *k = kv->key.ptr;
        /* keys with NUL bytes inside cannot be looked up as C strings */
        if (strlen(k) == kv->key.len) FUZZ_CHECK(sl_gguf_find(g, k) == kv);
        uint32_t u32;
        uint64_t u64;
        int32_t i32;
        float f;
        bool b;
        sink += sl_gguf_get_u32(g, k, &u32) + sl_gguf_get_u64(g, k, &u64) +
                sl_gguf_get_i32(g, k, &i32) + sl_gguf_get_f32(g, k, &f) +
                sl_gguf_get_bool(g, k, &b);
        const char *s = sl_gguf_get_str(g, k);
        if (s) sink += strlen(s);
        const sl_gguf_array *a = sl_gguf_get_arr(g, k);
        if (a) walk_array(a, 1);
        sink += strlen(sl_gguf_vtype_name(kv->value.type));
    }
    FUZZ_CHECK(sl_gguf_kv_at(g, sl_gguf_kv_count(g)) == NULL);

    uint64_t n = sl_gguf_tensor_count(g);
    for (uint64_t i = 0; i < n; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        FUZZ_CHECK(t && t->n_dims >= 1 && t->n_dims <= SL_GGUF_MAX_DIMS);
        FUZZ_CHECK(t->offset % align == 0 && t->offset >= sl_gguf_data_offset(g, 0));
        FUZZ_CHECK(t->nbytes <= size && t->offset <= size - t->nbytes);
        if (strlen(t->name.ptr) == t->name.len) FUZZ_CHECK(sl_gguf_find_tensor(g, t->name.ptr) == t);
        uint8_t *buf = malloc(t->nbytes);
        FUZZ_CHECK(buf);
        sl_err e2;
        FUZZ_CHECK(sl_gguf_read_tensor(g, t, 0, buf, t->nbytes, &e2) == SL_OK);
        FUZZ_CHECK(memcmp(buf, data + t->offset, t->nbytes) == 0);
        FUZZ_CHECK(sl_gguf_read_tensor(g, t, 1, buf, t->nbytes, &e2) != SL_OK);
        free(buf);
    }
    FUZZ_CHECK(sl_gguf_tensor_at(g, n) == NULL);
    sl_gguf_close(g);
    return 0;
}
