/* test_gguf.c - the GGUF writer and reader against each other and against
 * hand-worked layouts: every metadata value type, typed getters, several
 * tensor types and shapes with their sizes and aligned offsets, streaming
 * in odd chunks, writer misuse, split models, memory images, header buffer
 * growth, and the llama.cpp vocabulary fixtures.
 *
 * Expected values are literals in the test or worked out in the comments
 * from the GGUF layout and the published block sizes (q8_0: 32 elements in
 * 34 bytes; q4_K and q6_K: 256 elements in 144 and 210 bytes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "test.h"

/* The data byte at position i of tensor k: a formula the code never sees. */
static uint8_t pat(uint64_t i, unsigned k)
{
    return (uint8_t)((i * 131u + k * 71u + (i >> 8) * 7u) ^ 0x5a);
}

static char *tpath(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    return t_path(buf[k], sizeof buf[k], name);
}

static uint64_t file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return (uint64_t)n;
}

/* With SL_GGUF_CORPUS_DIR set, small files the writer made are copied there
 * as fuzzing seeds (tests/fuzz/make_corpus.sh). */
static void keep_for_corpus(const char *path, const char *label)
{
    const char *dir = getenv("SL_GGUF_CORPUS_DIR");
    if (!dir || !*dir) return;
    uint64_t n = file_size(path);
    if (n == 0 || n > 16384) return;
    char out[1024];
    snprintf(out, sizeof out, "%s/%s.gguf", dir, label);
    FILE *in = fopen(path, "rb"), *o = fopen(out, "wb");
    if (in && o) {
        char buf[16384];
        size_t k = fread(buf, 1, sizeof buf, in);
        if (fwrite(buf, 1, k, o) != k) perror(out);
    }
    if (in) fclose(in);
    if (o) fclose(o);
}

/* ---- metadata ------------------------------------------------------------- */

static int set(sl_gguf_writer *w, const char *key, sl_gguf_value v)
{
    return sl_gguf_writer_set_value(w, key, &v);
}

#define V(T, field, x) ((sl_gguf_value){.type = (T), .v.field = (x)})

static const uint8_t a_u8[] = {1, 2, 255};
static const int8_t a_i8[] = {-1, 0, 127};
static const uint16_t a_u16[] = {65535, 3};
static const int16_t a_i16[] = {-32768, 5};
static const uint32_t a_u32[] = {4000000000u};
static const int32_t a_i32[] = {-5, 0, 7};
static const float a_f32[] = {0.5f, -2.0f};
static const uint8_t a_bool[] = {1, 0, 1};
static const uint64_t a_u64[] = {UINT64_MAX};
static const int64_t a_i64[] = {INT64_MIN};
static const double a_f64[] = {1e300, -0.25};

static void write_all_types(const char *path)
{
    sl_gguf_writer *w;
    sl_err e = {0};
    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(set(w, "s.u8", V(SL_GGUF_UINT8, u64, 200)) == SL_OK);
    CHECK(set(w, "s.i8", V(SL_GGUF_INT8, i64, -100)) == SL_OK);
    CHECK(set(w, "s.u16", V(SL_GGUF_UINT16, u64, 60000)) == SL_OK);
    CHECK(set(w, "s.i16", V(SL_GGUF_INT16, i64, -30000)) == SL_OK);
    CHECK(set(w, "s.u32", V(SL_GGUF_UINT32, u64, 4000000000u)) == SL_OK);
    CHECK(set(w, "s.i32", V(SL_GGUF_INT32, i64, -2000000000)) == SL_OK);
    CHECK(set(w, "s.f32", V(SL_GGUF_FLOAT32, f64, 0.15625)) == SL_OK);
    CHECK(set(w, "s.bool", V(SL_GGUF_BOOL, b, true)) == SL_OK);
    CHECK(set(w, "s.u64", V(SL_GGUF_UINT64, u64, ((uint64_t)1 << 63) + 5)) == SL_OK);
    CHECK(set(w, "s.i64", V(SL_GGUF_INT64, i64, -((int64_t)1 << 62) - 3)) == SL_OK);
    CHECK(set(w, "s.f64", V(SL_GGUF_FLOAT64, f64, -1.0 / 3.0)) == SL_OK);
    sl_gguf_value nul = {.type = SL_GGUF_STRING, .v.str = {"a\0b", 3}};
    CHECK(sl_gguf_writer_set_value(w, "s.nul", &nul) == SL_OK);
    /* the convenience setters */
    CHECK(sl_gguf_writer_set_u32(w, "c.u32", 7) == SL_OK);
    CHECK(sl_gguf_writer_set_i32(w, "c.i32", -7) == SL_OK);
    CHECK(sl_gguf_writer_set_u64(w, "c.u64", 1ull << 40) == SL_OK);
    CHECK(sl_gguf_writer_set_f32(w, "c.f32", 1e-6f) == SL_OK);
    CHECK(sl_gguf_writer_set_bool(w, "c.bool", false) == SL_OK);
    CHECK(sl_gguf_writer_set_str(w, "c.str", "h\xc3\xa9llo") == SL_OK);
    const char *strs[] = {"a", "", "ccc"};
    CHECK(sl_gguf_writer_set_arr_str(w, "a.str", strs, 3) == SL_OK);
    CHECK(sl_gguf_writer_set_arr_i32(w, "a.i32", a_i32, 3) == SL_OK);
    CHECK(sl_gguf_writer_set_arr_f32(w, "a.f32", a_f32, 2) == SL_OK);
    CHECK(sl_gguf_writer_set_arr_i32(w, "a.empty", NULL, 0) == SL_OK);
#define ARR(key, T, a, n)                                                              \
    CHECK(set(w, key, (sl_gguf_value){.type = SL_GGUF_ARRAY, .v.arr = {T, n, a}}) == SL_OK)
    ARR("a.u8", SL_GGUF_UINT8, a_u8, 3);
    ARR("a.i8", SL_GGUF_INT8, a_i8, 3);
    ARR("a.u16", SL_GGUF_UINT16, a_u16, 2);
    ARR("a.i16", SL_GGUF_INT16, a_i16, 2);
    ARR("a.u32", SL_GGUF_UINT32, a_u32, 1);
    ARR("a.bool", SL_GGUF_BOOL, a_bool, 3);
    ARR("a.u64", SL_GGUF_UINT64, a_u64, 1);
    ARR("a.i64", SL_GGUF_INT64, a_i64, 1);
    ARR("a.f64", SL_GGUF_FLOAT64, a_f64, 2);
    /* nested: [[-5, 0, 7], [0.5, -2]] and [["a", "", "ccc"]] */
    sl_gguf_str ss[3] = {{"a", 1}, {"", 0}, {"ccc", 3}};
    sl_gguf_value inner[2] = {
        {.type = SL_GGUF_ARRAY, .v.arr = {SL_GGUF_INT32, 3, a_i32}},
        {.type = SL_GGUF_ARRAY, .v.arr = {SL_GGUF_FLOAT32, 2, a_f32}},
    };
    sl_gguf_value inner_s[1] = {{.type = SL_GGUF_ARRAY, .v.arr = {SL_GGUF_STRING, 3, ss}}};
    ARR("n.mixed", SL_GGUF_ARRAY, inner, 2);
    ARR("n.str", SL_GGUF_ARRAY, inner_s, 1);
#undef ARR
    CHECK(sl_gguf_writer_close(w, &e) == SL_OK);
}

TEST(roundtrip_every_value_type)
{
    const char *path = tpath("types.gguf");
    write_all_types(path);
    keep_for_corpus(path, "writer_all_types");
    sl_gguf *g;
    sl_err e = {0};
    CHECK_MSG(sl_gguf_open(&g, path, &e) == SL_OK, "%s", e.msg);
    if (e.code) return;
    CHECK_EQ_INT(sl_gguf_version(g), 3);
    CHECK_EQ_INT(sl_gguf_alignment(g), 32);
    CHECK_EQ_INT(sl_gguf_tensor_count(g), 0);
    CHECK_EQ_INT(sl_gguf_kv_count(g), 33); /* 12 + 6 + 4 + 9 + 2 set above */
    /* positional access keeps the order of the setters */
    CHECK(!strcmp(sl_gguf_kv_at(g, 0)->key.ptr, "s.u8"));
    CHECK(!strcmp(sl_gguf_kv_at(g, 32)->key.ptr, "n.str"));
    CHECK(sl_gguf_kv_at(g, 33) == NULL);
    /* the first kv starts right after the 24-byte header */
    CHECK_EQ_INT(sl_gguf_kv_at(g, 0)->file_offset, 24);

    const sl_gguf_kv *kv;
#define SCALAR(key, T, field, x)                                                     \
    kv = sl_gguf_find(g, key);                                                       \
    CHECK_MSG(kv && kv->value.type == (T) && kv->value.v.field == (x), "%s", key)
    SCALAR("s.u8", SL_GGUF_UINT8, u64, 200);
    SCALAR("s.i8", SL_GGUF_INT8, i64, -100);
    SCALAR("s.u16", SL_GGUF_UINT16, u64, 60000);
    SCALAR("s.i16", SL_GGUF_INT16, i64, -30000);
    SCALAR("s.u32", SL_GGUF_UINT32, u64, 4000000000u);
    SCALAR("s.i32", SL_GGUF_INT32, i64, -2000000000);
    SCALAR("s.f32", SL_GGUF_FLOAT32, f64, 0.15625);
    SCALAR("s.bool", SL_GGUF_BOOL, b, true);
    SCALAR("s.u64", SL_GGUF_UINT64, u64, ((uint64_t)1 << 63) + 5);
    SCALAR("s.i64", SL_GGUF_INT64, i64, -((int64_t)1 << 62) - 3);
    SCALAR("s.f64", SL_GGUF_FLOAT64, f64, -1.0 / 3.0);
    SCALAR("c.u32", SL_GGUF_UINT32, u64, 7);
    SCALAR("c.i32", SL_GGUF_INT32, i64, -7);
    SCALAR("c.u64", SL_GGUF_UINT64, u64, 1ull << 40);
    SCALAR("c.f32", SL_GGUF_FLOAT32, f64, (double)1e-6f);
    SCALAR("c.bool", SL_GGUF_BOOL, b, false);
#undef SCALAR
    kv = sl_gguf_find(g, "s.nul");
    CHECK(kv && kv->value.type == SL_GGUF_STRING && kv->value.v.str.len == 3 &&
          !memcmp(kv->value.v.str.ptr, "a\0b", 4));
    CHECK(!strcmp(sl_gguf_get_str(g, "c.str"), "h\xc3\xa9llo"));

    const sl_gguf_array *a = sl_gguf_get_arr(g, "a.str");
    CHECK(a && a->type == SL_GGUF_STRING && a->n == 3);
    CHECK(!strcmp(sl_gguf_arr_str(a, 0)->ptr, "a") && sl_gguf_arr_str(a, 1)->len == 0 &&
          !strcmp(sl_gguf_arr_str(a, 2)->ptr, "ccc"));
    CHECK(sl_gguf_arr_str(a, 3) == NULL);
    CHECK(sl_gguf_get_arr(g, "a.empty")->n == 0);

    int64_t i;
    double d;
    a = sl_gguf_get_arr(g, "a.i32");
    CHECK(a->type == SL_GGUF_INT32 && a->n == 3);
    CHECK(sl_gguf_arr_i64(a, 0, &i) && i == -5);
    CHECK(sl_gguf_arr_i64(a, 2, &i) && i == 7);
    CHECK(!sl_gguf_arr_i64(a, 3, &i));
    CHECK(sl_gguf_arr_str(a, 0) == NULL);
    a = sl_gguf_get_arr(g, "a.f32");
    CHECK(sl_gguf_arr_f64(a, 1, &d) && d == -2.0);
    CHECK(!sl_gguf_arr_i64(a, 0, &i)); /* floats are not integers */
    a = sl_gguf_get_arr(g, "a.u8");
    CHECK(sl_gguf_arr_i64(a, 2, &i) && i == 255);
    a = sl_gguf_get_arr(g, "a.i8");
    CHECK(sl_gguf_arr_i64(a, 0, &i) && i == -1);
    CHECK(sl_gguf_arr_i64(a, 2, &i) && i == 127);
    a = sl_gguf_get_arr(g, "a.u16");
    CHECK(sl_gguf_arr_i64(a, 0, &i) && i == 65535);
    a = sl_gguf_get_arr(g, "a.i16");
    CHECK(sl_gguf_arr_i64(a, 0, &i) && i == -32768);
    a = sl_gguf_get_arr(g, "a.u32");
    CHECK(sl_gguf_arr_f64(a, 0, &d) && d == 4000000000.0);
    a = sl_gguf_get_arr(g, "a.bool");
    CHECK(a->type == SL_GGUF_BOOL && sl_gguf_arr_i64(a, 0, &i) && i == 1);
    CHECK(sl_gguf_arr_i64(a, 1, &i) && i == 0);
    a = sl_gguf_get_arr(g, "a.u64");
    CHECK(!sl_gguf_arr_i64(a, 0, &i)); /* 2^64-1 does not fit int64 */
    CHECK(sl_gguf_arr_f64(a, 0, &d) && d == 18446744073709551615.0);
    a = sl_gguf_get_arr(g, "a.i64");
    CHECK(sl_gguf_arr_i64(a, 0, &i) && i == INT64_MIN);
    a = sl_gguf_get_arr(g, "a.f64");
    CHECK(sl_gguf_arr_f64(a, 0, &d) && d == 1e300);
    CHECK(sl_gguf_arr_f64(a, 1, &d) && d == -0.25);

    a = sl_gguf_get_arr(g, "n.mixed");
    CHECK(a && a->type == SL_GGUF_ARRAY && a->n == 2);
    if (a && a->n == 2) {
        const sl_gguf_value *el = a->data;
        CHECK(el[0].type == SL_GGUF_ARRAY && el[0].v.arr.type == SL_GGUF_INT32 &&
              el[0].v.arr.n == 3);
        CHECK(sl_gguf_arr_i64(&el[0].v.arr, 1, &i) && i == 0);
        CHECK(el[1].v.arr.type == SL_GGUF_FLOAT32 && el[1].v.arr.n == 2);
        CHECK(sl_gguf_arr_f64(&el[1].v.arr, 0, &d) && d == 0.5);
        CHECK(!sl_gguf_arr_f64(a, 0, &d)); /* an array element is not a number */
    }
    a = sl_gguf_get_arr(g, "n.str");
    CHECK(a && a->n == 1);
    if (a && a->n == 1) {
        const sl_gguf_value *el = a->data;
        CHECK(!strcmp(sl_gguf_arr_str(&el[0].v.arr, 2)->ptr, "ccc"));
    }
    sl_gguf_close(g);
    remove(path);
}

TEST(typed_getters_convert_only_in_range)
{
    const char *path = tpath("types2.gguf");
    write_all_types(path);
    sl_gguf *g;
    sl_err e = {0};
    CHECK(sl_gguf_open(&g, path, &e) == SL_OK);
    if (e.code) return;
    uint32_t u32 = 12345;
    uint64_t u64;
    int32_t i32;
    float f;
    bool b;
    CHECK(sl_gguf_get_u32(g, "s.u8", &u32) && u32 == 200);
    CHECK(sl_gguf_get_u32(g, "s.u32", &u32) && u32 == 4000000000u);
    CHECK(!sl_gguf_get_i32(g, "s.u32", &i32)); /* 4e9 > INT32_MAX */
    CHECK(sl_gguf_get_i32(g, "s.i8", &i32) && i32 == -100);
    CHECK(sl_gguf_get_i32(g, "s.i32", &i32) && i32 == -2000000000);
    u32 = 12345;
    CHECK(!sl_gguf_get_u32(g, "s.i8", &u32) && u32 == 12345); /* negative; untouched */
    CHECK(!sl_gguf_get_u32(g, "s.u64", &u32));
    CHECK(sl_gguf_get_u64(g, "s.u64", &u64) && u64 == ((uint64_t)1 << 63) + 5);
    CHECK(!sl_gguf_get_u64(g, "s.i64", &u64));
    CHECK(sl_gguf_get_u64(g, "c.u32", &u64) && u64 == 7);
    CHECK(!sl_gguf_get_u32(g, "s.f32", &u32)); /* floats do not convert to ints */
    CHECK(sl_gguf_get_f32(g, "s.f32", &f) && f == 0.15625f);
    CHECK(sl_gguf_get_f32(g, "s.f64", &f) && f == (float)(-1.0 / 3.0));
    CHECK(!sl_gguf_get_f32(g, "s.u32", &f));
    CHECK(sl_gguf_get_bool(g, "s.bool", &b) && b);
    CHECK(!sl_gguf_get_bool(g, "s.u8", &b));
    CHECK(sl_gguf_get_str(g, "s.u8") == NULL);
    CHECK(sl_gguf_get_arr(g, "s.u8") == NULL);
    CHECK(sl_gguf_get_str(g, "missing") == NULL);
    CHECK(!sl_gguf_get_u32(g, "missing", &u32));
    CHECK(sl_gguf_find(g, "s.u") == NULL);   /* prefix of a key */
    CHECK(sl_gguf_find(g, "s.u8x") == NULL); /* key is a prefix */
    CHECK(!strcmp(sl_gguf_vtype_name(SL_GGUF_UINT32), "uint32"));
    CHECK(!strcmp(sl_gguf_vtype_name(SL_GGUF_ARRAY), "array"));
    CHECK(!strcmp(sl_gguf_vtype_name((sl_gguf_vtype)99), "unknown"));
    sl_gguf_close(g);
    remove(path);
}

/* ---- tensors --------------------------------------------------------------- */

typedef struct tspec {
    const char *name;
    sl_type type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint64_t nbytes; /* worked out by hand */
} tspec;

/* Sizes: f32 7 x 4 = 28; f16 3*5 x 2 = 30; q8_0 [64, 3] = 2 blocks/row x 3
 * rows x 34 = 204; q4_K [256, 2, 3] = 6 blocks x 144 = 864; bf16
 * [4, 1, 1, 2] = 8 x 2 = 16; q6_K [512, 1, 2] = 4 blocks x 210 = 840. */
static const tspec specs[] = {
    {"t.f32", SL_TYPE_F32, 1, {7, 1, 1, 1}, 28},
    {"t.f16", SL_TYPE_F16, 2, {3, 5, 1, 1}, 30},
    {"t.q8_0", SL_TYPE_Q8_0, 2, {64, 3, 1, 1}, 204},
    {"blk.0.ffn_up_exps.weight", SL_TYPE_Q4_K, 3, {256, 2, 3, 1}, 864},
    {"t.bf16", SL_TYPE_BF16, 4, {4, 1, 1, 2}, 16},
    {"t.q6_K", SL_TYPE_Q6_K, 3, {512, 1, 2, 1}, 840},
};
#define N_SPECS (sizeof specs / sizeof specs[0])

/* Relative offsets with 32-byte alignment: 0; 28 -> 32; 32 + 30 -> 64;
 * 64 + 204 = 268 -> 288; 288 + 864 = 1152; 1152 + 16 -> 1184. */
static const uint64_t rel32[N_SPECS] = {0, 32, 64, 288, 1152, 1184};
/* With alignment 256: 0; 256; 512; 768; 768 + 864 = 1632 -> 1792; 2048. */
static const uint64_t rel256[N_SPECS] = {0, 256, 512, 768, 1792, 2048};

/* Writes the specs' data, pattern-filled, in chunks of `chunk` bytes that
 * freely span tensor boundaries. */
static int write_specs(const char *path, uint32_t alignment, size_t chunk, sl_err *e)
{
    sl_gguf_writer *w;
    int rc = sl_gguf_writer_open(&w, path, e);
    if (rc) return rc;
    sl_gguf_writer_set_str(w, "general.architecture", "test");
    if (alignment) sl_gguf_writer_set_u32(w, "general.alignment", alignment);
    uint64_t total = 0;
    for (size_t k = 0; k < N_SPECS; k++) {
        rc = sl_gguf_writer_add_tensor(w, specs[k].name, specs[k].type, specs[k].n_dims,
                                       specs[k].ne, e);
        if (rc) {
            sl_gguf_writer_abort(w);
            return rc;
        }
        total += specs[k].nbytes;
    }
    uint8_t *all = malloc(total);
    uint64_t o = 0;
    for (size_t k = 0; k < N_SPECS; k++)
        for (uint64_t i = 0; i < specs[k].nbytes; i++) all[o++] = pat(i, (unsigned)k);
    for (o = 0; o < total; o += chunk) {
        size_t n = total - o < chunk ? (size_t)(total - o) : chunk;
        if ((rc = sl_gguf_writer_write(w, all + o, n, e))) break;
    }
    free(all);
    if (rc) {
        sl_gguf_writer_abort(w);
        return rc;
    }
    return sl_gguf_writer_close(w, e);
}

static void check_specs(sl_gguf *g, const uint64_t *rel, uint64_t alignment)
{
    CHECK_EQ_INT(sl_gguf_alignment(g), alignment);
    CHECK_EQ_INT(sl_gguf_tensor_count(g), N_SPECS);
    uint64_t base = sl_gguf_data_offset(g, 0);
    CHECK_EQ_INT(base % alignment, 0);
    for (size_t k = 0; k < N_SPECS; k++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, k);
        CHECK(t == sl_gguf_find_tensor(g, specs[k].name));
        CHECK(!strcmp(t->name.ptr, specs[k].name));
        CHECK_EQ_INT(t->type, specs[k].type);
        CHECK_EQ_INT(t->n_dims, specs[k].n_dims);
        uint64_t n = 1;
        for (int d = 0; d < 4; d++) {
            CHECK_EQ_INT(t->ne[d], specs[k].ne[d]);
            n *= specs[k].ne[d];
        }
        CHECK_EQ_INT(t->n_elements, n);
        CHECK_EQ_INT(t->nbytes, specs[k].nbytes);
        CHECK_EQ_INT(t->offset, base + rel[k]);
        CHECK_EQ_INT(t->file_index, 0);
        uint8_t *buf = malloc(t->nbytes);
        sl_err e = {0};
        CHECK(sl_gguf_read_tensor(g, t, 0, buf, t->nbytes, &e) == SL_OK);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < t->nbytes; i++) bad += buf[i] != pat(i, (unsigned)k);
        CHECK_MSG(bad == 0, "tensor %s: %llu bytes differ", t->name.ptr, (unsigned long long)bad);
        /* a partial read from the middle */
        CHECK(sl_gguf_read_tensor(g, t, 5, buf, 3, &e) == SL_OK);
        CHECK(buf[0] == pat(5, (unsigned)k) && buf[2] == pat(7, (unsigned)k));
        /* past its end */
        CHECK(sl_gguf_read_tensor(g, t, 1, buf, t->nbytes, &e) == SL_EINVAL);
        CHECK_STR_CONTAINS(e.msg, "outside its");
        free(buf);
    }
    CHECK(sl_gguf_tensor_at(g, N_SPECS) == NULL);
    CHECK(sl_gguf_find_tensor(g, "nope") == NULL);
}

TEST(roundtrip_tensors)
{
    const char *path = tpath("tensors.gguf");
    sl_err e = {0};
    /* 7-byte chunks: every tensor boundary falls inside a chunk */
    CHECK_MSG(write_specs(path, 0, 7, &e) == SL_OK, "%s", e.msg);
    keep_for_corpus(path, "writer_tensors");
    sl_gguf *g;
    CHECK_MSG(sl_gguf_open(&g, path, &e) == SL_OK, "%s", e.msg);
    if (e.code) return;
    check_specs(g, rel32, 32);
    /* every tensor is padded, the last too: the file ends at 1184 + 840 ->
     * 2048 past the data section */
    CHECK_EQ_INT(sl_gguf_file_size(g, 0), sl_gguf_data_offset(g, 0) + 2048);
    CHECK_EQ_INT(sl_gguf_file_size(g, 0), file_size(path));
    CHECK_EQ_INT(sl_gguf_file_count(g), 1);
    CHECK(!strcmp(sl_gguf_file_path(g, 0), path));
    CHECK(sl_gguf_file_path(g, 1) == NULL);

    /* the same bytes from memory read the same */
    uint64_t n = file_size(path);
    uint8_t *img = malloc(n);
    FILE *f = fopen(path, "rb");
    CHECK(fread(img, 1, n, f) == n);
    fclose(f);
    sl_gguf *m;
    int rc = sl_gguf_open_memory(&m, img, n, &e);
    CHECK(rc == SL_OK);
    if (rc == SL_OK) {
        check_specs(m, rel32, 32);
        CHECK(!strcmp(sl_gguf_file_path(m, 0), "(memory)"));
        /* a tensor of another handle is refused */
        uint8_t x;
        CHECK(sl_gguf_read_tensor(m, sl_gguf_tensor_at(g, 0), 0, &x, 1, &e) == SL_EINVAL);
        sl_gguf_close(m);
    }
    free(img);
    sl_gguf_close(g);
    remove(path);
}

TEST(custom_alignment_and_big_chunks)
{
    const char *path = tpath("align.gguf");
    sl_err e = {0};
    /* one chunk holding everything */
    CHECK_MSG(write_specs(path, 256, 1 << 20, &e) == SL_OK, "%s", e.msg);
    keep_for_corpus(path, "writer_tensors_align256");
    sl_gguf *g;
    CHECK_MSG(sl_gguf_open(&g, path, &e) == SL_OK, "%s", e.msg);
    if (e.code) return;
    check_specs(g, rel256, 256);
    sl_gguf_close(g);
    remove(path);
}

TEST(writer_refuses_misuse)
{
    const char *path = tpath("misuse.gguf");
    sl_err e = {0};
    sl_gguf_writer *w;
    const uint64_t ne[2] = {32, 2};

    /* more data than declared */
    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "a", SL_TYPE_F32, 1, ne, &e) == SL_OK);
    uint8_t buf[200] = {0};
    CHECK(sl_gguf_writer_write(w, buf, 129, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "1 bytes of tensor data beyond the 1 declared tensors");
    CHECK(sl_gguf_writer_close(w, &e) == SL_EINVAL); /* failure is sticky */

    /* less data than declared */
    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "a", SL_TYPE_F32, 2, ne, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "b", SL_TYPE_F32, 1, ne, &e) == SL_OK);
    CHECK(sl_gguf_writer_write(w, buf, 200, &e) == SL_OK);
    CHECK(sl_gguf_writer_close(w, &e) == SL_EINVAL);
    /* a = 256 bytes, so 200 bytes leave it short */
    CHECK_STR_CONTAINS(e.msg, "closed after 0 of 2 tensors were written (tensor 'a' has 200 "
                              "of 256 bytes)");

    /* declaration errors */
    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "a", SL_TYPE_F32, 1, ne, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "a", SL_TYPE_F32, 1, ne, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "tensor 'a' declared twice");
    sl_gguf_writer_abort(w);

    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    const uint64_t row16[1] = {16};
    CHECK(sl_gguf_writer_add_tensor(w, "q", SL_TYPE_Q8_0, 1, row16, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "row length 16 is not a multiple of the q8_0 block size 32");
    sl_gguf_writer_abort(w);

    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "x", (sl_type)4, 1, ne, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "unknown type 4");
    sl_gguf_writer_abort(w);

    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "x", SL_TYPE_F32, 5, ne, &e) == SL_EINVAL);
    sl_gguf_writer_abort(w);

    /* metadata mistakes surface at close */
    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_set_u32(w, "k", 1) == SL_OK);
    CHECK(sl_gguf_writer_set_u32(w, "k", 2) == SL_EINVAL);
    CHECK(sl_gguf_writer_close(w, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "metadata key 'k' set twice");

    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_set_u32(w, "general.alignment", 48) == SL_EINVAL);
    CHECK(sl_gguf_writer_close(w, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "non-zero power of two");

    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_add_tensor(w, "a", SL_TYPE_F32, 1, ne, &e) == SL_OK);
    CHECK(sl_gguf_writer_write(w, buf, 10, &e) == SL_OK);
    CHECK(sl_gguf_writer_set_u32(w, "late", 1) == SL_EINVAL);
    CHECK(sl_gguf_writer_close(w, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "set after tensor data writing began");

    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    sl_gguf_value big = {.type = SL_GGUF_UINT8, .v.u64 = 256};
    CHECK(sl_gguf_writer_set_value(w, "u8", &big) == SL_EINVAL);
    sl_gguf_writer_abort(w);

    CHECK(sl_gguf_writer_open(&w, "/nonexistent-dir/x.gguf", &e) == SL_EIO);
    CHECK_STR_CONTAINS(e.msg, "/nonexistent-dir/x.gguf");
    remove(path);
}

/* ---- split models -------------------------------------------------------------- */

/* Writes one part: tensors names[] (f32 [8], 32 bytes each, byte i of tensor
 * k = pat(i, salt + k)), with split keys when no >= 0. */
static void write_part(const char *path, int no, int count, int total, const char *const *names,
                       int n)
{
    sl_gguf_writer *w;
    sl_err e = {0};
    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    if (no == 0) sl_gguf_writer_set_str(w, "general.architecture", "test");
    if (no >= 0) {
        sl_gguf_value v = {.type = SL_GGUF_UINT16, .v.u64 = (uint64_t)no};
        sl_gguf_writer_set_value(w, "split.no", &v);
        v.v.u64 = (uint64_t)count;
        sl_gguf_writer_set_value(w, "split.count", &v);
        if (total >= 0) {
            sl_gguf_value t = {.type = SL_GGUF_INT32, .v.i64 = total};
            sl_gguf_writer_set_value(w, "split.tensors.count", &t);
        }
    }
    const uint64_t ne[1] = {8};
    for (int k = 0; k < n; k++)
        CHECK(sl_gguf_writer_add_tensor(w, names[k], SL_TYPE_F32, 1, ne, &e) == SL_OK);
    for (int k = 0; k < n; k++) {
        uint8_t d[32];
        for (int i = 0; i < 32; i++) d[i] = pat((uint64_t)i, (unsigned)(names[k][0] + k));
        CHECK(sl_gguf_writer_write(w, d, 32, &e) == SL_OK);
    }
    CHECK_MSG(sl_gguf_writer_close(w, &e) == SL_OK, "%s", e.msg);
}

TEST(split_model_reads_as_one)
{
    const char *p1 = tpath("m-00001-of-00002.gguf"), *p2 = tpath("m-00002-of-00002.gguf");
    const char *n1[] = {"a", "b"}, *n2[] = {"c"};
    write_part(p1, 0, 2, 3, n1, 2);
    write_part(p2, 1, 2, -1, n2, 1);
    keep_for_corpus(p1, "writer_split_part1");
    keep_for_corpus(p2, "writer_split_part2");
    sl_gguf *g;
    sl_err e = {0};
    CHECK_MSG(sl_gguf_open(&g, p1, &e) == SL_OK, "%s", e.msg);
    if (e.code) return;
    CHECK_EQ_INT(sl_gguf_file_count(g), 2);
    CHECK(!strcmp(sl_gguf_file_path(g, 1), p2));
    CHECK_EQ_INT(sl_gguf_file_size(g, 1), file_size(p2));
    CHECK_EQ_INT(sl_gguf_tensor_count(g), 3);
    CHECK(!strcmp(sl_gguf_get_str(g, "general.architecture"), "test")); /* part 1 metadata */
    const sl_gguf_tensor *c = sl_gguf_find_tensor(g, "c");
    CHECK(c && c == sl_gguf_tensor_at(g, 2) && c->file_index == 1);
    CHECK(sl_gguf_find_tensor(g, "a")->file_index == 0);
    if (c) {
        /* part 2 has no kv but the 3 split keys and one tensor: its data is
         * at the start of its own data section */
        CHECK_EQ_INT(c->offset, sl_gguf_data_offset(g, 1));
        uint8_t d[32];
        CHECK(sl_gguf_read_tensor(g, c, 0, d, 32, &e) == SL_OK);
        int bad = 0;
        for (int i = 0; i < 32; i++) bad += d[i] != pat((uint64_t)i, 'c' + 0);
        CHECK_EQ_INT(bad, 0);
    }
    const sl_gguf_tensor *b = sl_gguf_find_tensor(g, "b");
    if (b) {
        uint8_t d[32];
        CHECK(sl_gguf_read_tensor(g, b, 0, d, 32, &e) == SL_OK);
        CHECK(d[31] == pat(31, 'b' + 1));
    }
    sl_gguf_close(g);

    /* opening the second part asks for the first */
    CHECK(sl_gguf_open(&g, p2, &e) == SL_EINVAL);
    CHECK_STR_CONTAINS(e.msg, "part 2 of a 2-part split model");

    /* a split file under a plain name is refused (tensors would be lost) */
    const char *plain = tpath("renamed.gguf");
    write_part(plain, 0, 2, 3, n1, 2);
    CHECK(sl_gguf_open(&g, plain, &e) == SL_EFORMAT);
    CHECK_STR_CONTAINS(e.msg, "split.count = 2 says this is one part of a split model");
    remove(plain);

    /* a missing part */
    remove(p2);
    CHECK(sl_gguf_open(&g, p1, &e) == SL_EIO);
    CHECK_STR_CONTAINS(e.msg, "m-00002-of-00002.gguf");
    remove(p1);
}

TEST(split_model_inconsistencies)
{
    const char *p1 = tpath("s-00001-of-00002.gguf"), *p2 = tpath("s-00002-of-00002.gguf");
    const char *n1[] = {"a", "b"}, *n2[] = {"c"}, *dup[] = {"a"};
    sl_gguf *g;
    sl_err e = {0};

    write_part(p1, 0, 2, 3, n1, 2);
    write_part(p2, 1, 3, -1, n2, 1); /* split.count says 3 */
    CHECK(sl_gguf_open(&g, p1, &e) == SL_EFORMAT);
    CHECK_STR_CONTAINS(e.msg, "split.count = 3, but the file name says 2 parts");

    write_part(p2, 0, 2, -1, n2, 1); /* split.no says first part */
    CHECK(sl_gguf_open(&g, p1, &e) == SL_EFORMAT);
    CHECK_STR_CONTAINS(e.msg, "split.no = 0, but the file name says part 2 of 2");

    write_part(p2, 1, 2, -1, dup, 1); /* "a" in both parts */
    CHECK(sl_gguf_open(&g, p1, &e) == SL_EFORMAT);
    CHECK_STR_CONTAINS(e.msg, "duplicate tensor name 'a' (in split parts 1 and 2)");

    write_part(p1, 0, 2, 5, n1, 2); /* split.tensors.count says 5 */
    write_part(p2, 1, 2, -1, n2, 1);
    CHECK(sl_gguf_open(&g, p1, &e) == SL_EFORMAT);
    CHECK_STR_CONTAINS(e.msg, "split.tensors.count = 5, but the 2 parts hold 3 tensors");

    /* no split keys at all: the names alone are enough */
    write_part(p1, -1, 0, -1, n1, 2);
    write_part(p2, -1, 0, -1, n2, 1);
    int rc = sl_gguf_open(&g, p1, &e);
    CHECK_MSG(rc == SL_OK, "%s", e.msg);
    if (rc == SL_OK) {
        CHECK_EQ_INT(sl_gguf_tensor_count(g), 3);
        sl_gguf_close(g);
    }
    remove(p1);
    remove(p2);
}

/* ---- big headers ------------------------------------------------------------- */

TEST(multi_megabyte_header_is_read_in_growing_chunks)
{
    /* 300000 strings "tok000000".. of 8 + 9 bytes = 5.1 MB of header: the
     * reader's 1 MiB first chunk must grow several times, and the tensor
     * after the array must still land where the writer put it */
    enum { N = 300000 };
    const char *path = tpath("bigheader.gguf");
    char *pool = malloc((size_t)N * 10);
    const char **strs = malloc(N * sizeof *strs);
    for (unsigned i = 0; i < N; i++) {
        snprintf(pool + 10 * i, 10, "tok%06u", i % 1000000u);
        strs[i] = pool + 10 * i;
    }
    sl_gguf_writer *w;
    sl_err e = {0};
    CHECK(sl_gguf_writer_open(&w, path, &e) == SL_OK);
    CHECK(sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", strs, N) == SL_OK);
    const uint64_t ne[1] = {8};
    CHECK(sl_gguf_writer_add_tensor(w, "after", SL_TYPE_F32, 1, ne, &e) == SL_OK);
    uint8_t d[32];
    for (int i = 0; i < 32; i++) d[i] = pat((uint64_t)i, 9);
    CHECK(sl_gguf_writer_write(w, d, 32, &e) == SL_OK);
    CHECK(sl_gguf_writer_close(w, &e) == SL_OK);
    free(strs);
    free(pool);

    sl_gguf *g;
    CHECK_MSG(sl_gguf_open(&g, path, &e) == SL_OK, "%s", e.msg);
    if (e.code) return;
    const sl_gguf_array *a = sl_gguf_get_arr(g, "tokenizer.ggml.tokens");
    CHECK(a && a->n == N);
    CHECK(!strcmp(sl_gguf_arr_str(a, N - 1)->ptr, "tok299999"));
    CHECK(!strcmp(sl_gguf_arr_str(a, 123456)->ptr, "tok123456"));
    /* header: 24 + key (8 + 21) + type 4 + elem type 4 + count 8 + N * 17
     * + tensor info (8 + 5 + 4 + 8 + 4 + 8) = 5100106 -> data at 5100128 */
    CHECK_EQ_INT(sl_gguf_data_offset(g, 0), 5100128);
    uint8_t r[32];
    CHECK(sl_gguf_read_tensor(g, sl_gguf_find_tensor(g, "after"), 0, r, 32, &e) == SL_OK);
    CHECK(!memcmp(r, d, 32));
    sl_gguf_close(g);
    remove(path);
}

/* ---- real files from llama.cpp ------------------------------------------------ */

TEST(llama_cpp_vocab_fixtures)
{
    /* vocabulary sizes and tokenizer kinds from the fixture README table */
    static const struct {
        const char *file, *model, *pre;
        uint64_t vocab;
    } fx[] = {
        {"ggml-vocab-gpt-2.gguf", "gpt2", "gpt-2", 50257},
        {"ggml-vocab-deepseek-llm.gguf", "gpt2", "deepseek-llm", 102400},
        {"ggml-vocab-starcoder.gguf", "gpt2", "starcoder", 49152},
        {"ggml-vocab-llama-spm.gguf", "llama", "default", 32000},
        {"ggml-vocab-phi-3.gguf", "llama", "default", 32064},
    };
    const char *dirs[] = {"../shared/fixtures/tokenizers", "/work/shared/fixtures/tokenizers"};
    const char *dir = NULL;
    for (size_t i = 0; i < 2 && !dir; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dirs[i], fx[0].file);
        if (file_size(p)) dir = dirs[i];
    }
    if (!dir) {
        printf("  (skipping: ../shared/fixtures/tokenizers not found)\n");
        return;
    }
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, fx[i].file);
        sl_gguf *g;
        sl_err e = {0};
        CHECK_MSG(sl_gguf_open(&g, p, &e) == SL_OK, "%s", e.msg);
        if (e.code) continue;
        CHECK_EQ_INT(sl_gguf_version(g), 3);
        CHECK_EQ_INT(sl_gguf_tensor_count(g), 0);
        CHECK(!strcmp(sl_gguf_get_str(g, "tokenizer.ggml.model"), fx[i].model));
        CHECK(!strcmp(sl_gguf_get_str(g, "tokenizer.ggml.pre"), fx[i].pre));
        const sl_gguf_array *a = sl_gguf_get_arr(g, "tokenizer.ggml.tokens");
        CHECK_MSG(a && a->type == SL_GGUF_STRING && a->n == fx[i].vocab, "%s", fx[i].file);
        const sl_gguf_array *tt = sl_gguf_get_arr(g, "tokenizer.ggml.token_type");
        CHECK(tt && tt->n == fx[i].vocab);
        sl_gguf_close(g);
    }
}

int main(void)
{
    RUN(roundtrip_every_value_type);
    RUN(typed_getters_convert_only_in_range);
    RUN(roundtrip_tensors);
    RUN(custom_alignment_and_big_chunks);
    RUN(writer_refuses_misuse);
    RUN(split_model_reads_as_one);
    RUN(split_model_inconsistencies);
    RUN(multi_megabyte_header_is_read_in_growing_chunks);
    RUN(llama_cpp_vocab_fixtures);
    return TEST_REPORT();
}
