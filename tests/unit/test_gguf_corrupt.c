/* test_gguf_corrupt.c - hand-made broken GGUF files, each of which must fail
 * with SL_EFORMAT and its own message naming the problem, the field and the
 * byte offset, both from memory and from a file on disk.
 *
 * Every file is assembled by test_gguf_bytes.h from the format description;
 * the expected byte offsets are worked out by hand in the comments:
 *   header = 24 bytes (magic 4, version 4, tensor count 8, kv count 8);
 *   string = 8-byte length + bytes, so key "k" takes 9 bytes;
 *   tensor info = name + n_dims 4 + 8 per dim + type 4 + offset 8.
 *
 * With SL_GGUF_CORPUS_DIR set, every file is also written there (this is how
 * tests/fuzz/corpus is made: tests/fuzz/make_corpus.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "gguf/gguf.h"
#include "test.h"
#include "test_gguf_bytes.h"

static void save(const char *path, const gb *b)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    if (b->n && fwrite(b->p, 1, b->n, f) != b->n) exit(2);
    fclose(f);
}

static void dump_corpus(const char *label, const gb *b)
{
    const char *dir = getenv("SL_GGUF_CORPUS_DIR");
    if (!dir || !*dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, label);
    save(path, b);
}

/* Opens b from memory and from a file; both must fail with SL_EFORMAT and a
 * message holding every non-NULL needle. */
static void expect_fail(const char *label, const gb *b, const char *n1, const char *n2)
{
    dump_corpus(label, b);
    sl_gguf *g = (sl_gguf *)1;
    sl_err e = {0};
    int rc = sl_gguf_open_memory(&g, b->p, b->n, &e);
    CHECK_MSG(rc == SL_EFORMAT, "%s: memory: rc %d, msg '%s'", label, rc, e.msg);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(e.msg, n1);
    if (n2) CHECK_STR_CONTAINS(e.msg, n2);
    sl_gguf_close(g);

    char path[512], fname[128];
    snprintf(fname, sizeof fname, "%s.gguf", label);
    t_path(path, sizeof path, fname);
    save(path, b);
    memset(&e, 0, sizeof e);
    g = (sl_gguf *)1;
    rc = sl_gguf_open(&g, path, &e);
    CHECK_MSG(rc == SL_EFORMAT, "%s: file: rc %d, msg '%s'", label, rc, e.msg);
    CHECK(g == NULL);
    CHECK_STR_CONTAINS(e.msg, n1);
    if (n2) CHECK_STR_CONTAINS(e.msg, n2);
    CHECK_STR_CONTAINS(e.msg, path); /* the file is named */
    sl_gguf_close(g);
    remove(path);
}

static void expect_ok(const char *label, const gb *b)
{
    dump_corpus(label, b);
    sl_gguf *g = NULL;
    sl_err e = {0};
    int rc = sl_gguf_open_memory(&g, b->p, b->n, &e);
    CHECK_MSG(rc == SL_OK, "%s: %s", label, e.msg);
    sl_gguf_close(g);
}

/* One tensor "a": info at 24: name 24..33, n_dims at 33, ne[0] at 37,
 * then type at 37 + 8*n_dims and offset 4 bytes later. Then padding to 32
 * and data_bytes zero bytes of data. */
static void one_tensor(gb *b, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                       uint64_t offset, size_t data_bytes)
{
    gb_header(b, 3, 1, 0);
    gb_tinfo(b, "a", n_dims, ne, type, offset);
    gb_pad(b, 32);
    gb_zeros(b, data_bytes);
}

TEST(builder_makes_valid_files)
{
    /* the baselines the broken files below deviate from must be accepted */
    gb b = {0};
    const uint64_t ne[2] = {8, 2};
    one_tensor(&b, 2, ne, 0 /* f32 */, 0, 64);
    expect_ok("valid_one_tensor", &b);
    gb_free(&b);

    gb_header(&b, 2, 0, 2); /* version 2 reads the same */
    gb_kv_str(&b, "general.architecture", "test");
    gb_kv_u32(&b, "general.alignment", 64);
    expect_ok("valid_v2_kv_only", &b);
    gb_free(&b);

    gb_header(&b, 3, 0, 0);
    expect_ok("valid_empty", &b);
    gb_free(&b);
}

TEST(truncated_header)
{
    /* magic + version, then 4 of the 8 bytes of the tensor count */
    gb b = {0};
    gb_put(&b, "GGUF", 4);
    gb_u32(&b, 3);
    gb_u32(&b, 0);
    expect_fail("truncated_header", &b, "unexpected end of file: header: tensor count",
                "needs 8 bytes at byte offset 8, but the file has 12 bytes");
    gb_free(&b);

    gb_put(&b, "GG", 2);
    expect_fail("truncated_magic", &b, "unexpected end of file: header: magic", NULL);
    gb_free(&b);

    expect_fail("empty_file", &b, "unexpected end of file", "the file has 0 bytes");
}

TEST(every_prefix_of_a_valid_file_fails_cleanly)
{
    /* a file using strings, arrays, two tensors and data: any cut must give
     * a format error (header cut: end of file; data cut: past end) */
    gb b = {0};
    gb_header(&b, 3, 2, 3);
    gb_kv_str(&b, "general.architecture", "test");
    gb_str(&b, "list");
    gb_u32(&b, GB_ARR);
    gb_u32(&b, GB_STR);
    gb_u64(&b, 2);
    gb_str(&b, "x");
    gb_str(&b, "yz");
    gb_kv_u32(&b, "n", 7);
    const uint64_t ne1[1] = {8}, ne2[2] = {32, 2};
    gb_tinfo(&b, "w1", 1, ne1, 0, 0);     /* f32: 32 bytes */
    gb_tinfo(&b, "w2", 2, ne2, 8, 32);    /* q8_0: 2 blocks x 34 = 68 bytes */
    gb_pad(&b, 32);
    gb_zeros(&b, 32 + 68);
    expect_ok("valid_full", &b);
    for (size_t n = 0; n < b.n; n++) {
        sl_gguf *g = NULL;
        sl_err e = {0};
        int rc = sl_gguf_open_memory(&g, b.p, n, &e);
        CHECK_MSG(rc == SL_EFORMAT && g == NULL, "prefix %zu: rc %d", n, rc);
        /* cut in the header: end of file, or a count the rest cannot hold;
         * cut in the data: a tensor past the end */
        CHECK_MSG(strstr(e.msg, "end of file") || strstr(e.msg, "left in the file could hold"),
                  "prefix %zu: '%s'", n, e.msg);
        sl_gguf_close(g);
    }
    gb_free(&b);
}

TEST(huge_tensor_count)
{
    gb b = {0};
    gb_header(&b, 3, (uint64_t)1 << 62, 0);
    expect_fail("huge_tensor_count", &b, "tensor count 4611686018427387904 at byte offset 8",
                "bytes left in the file");
    gb_free(&b);
}

TEST(huge_kv_count)
{
    gb b = {0};
    gb_header(&b, 3, 0, (uint64_t)1 << 40);
    expect_fail("huge_kv_count", &b, "metadata kv count 1099511627776 at byte offset 16",
                "bytes left in the file");
    gb_free(&b);
}

TEST(string_length_overflow)
{
    /* key length 2^64-1 at the first kv (24) */
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, UINT64_MAX);
    gb_put(&b, "k", 1);
    gb_zeros(&b, 16); /* enough bytes that one kv could fit */
    expect_fail("key_length_overflow", &b,
                "key length 18446744073709551615 at byte offset 24", "bytes left in the file");
    gb_free(&b);

    /* a string value of length 2^64-2: key "k" 24..33, type 33..37, len at 37 */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, GB_STR);
    gb_u64(&b, UINT64_MAX - 1);
    gb_put(&b, "abc", 3);
    expect_fail("value_length_overflow", &b, "metadata 'k'",
                "string length 18446744073709551614 at byte offset 37");
    gb_free(&b);
}

TEST(array_count_overflow)
{
    /* 2^61 uint64 elements: 2^61 * 8 wraps to 0 in 64 bits. Key "arr"
     * 24..35, value type 35..39, element type 39..43, count at 43. */
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "arr");
    gb_u32(&b, GB_ARR);
    gb_u32(&b, GB_U64);
    gb_u64(&b, (uint64_t)1 << 61);
    expect_fail("array_count_overflow", &b,
                "array length (uint64 elements) 2305843009213693952 at byte offset 43",
                "metadata 'arr'");
    gb_free(&b);
}

TEST(nested_array_too_deep)
{
    /* nine levels that each hold one array: the 8th level's element type
     * (ARRAY) is refused. Value starts at 24 + 9 + 4 = 37; each level's
     * element type + count take 12 bytes, so level 8 starts at 37 + 7*12. */
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "n");
    gb_u32(&b, GB_ARR);
    for (int i = 0; i < 9; i++) {
        gb_u32(&b, GB_ARR);
        gb_u64(&b, 1);
    }
    gb_u32(&b, GB_U8);
    gb_u64(&b, 0);
    expect_fail("nested_too_deep", &b, "nested more than 8 deep at byte offset 121", NULL);
    gb_free(&b);

    /* 8 levels are fine */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "n");
    gb_u32(&b, GB_ARR);
    for (int i = 0; i < 7; i++) {
        gb_u32(&b, GB_ARR);
        gb_u64(&b, 1);
    }
    gb_u32(&b, GB_U8);
    gb_u64(&b, 0);
    expect_ok("nested_8_deep", &b);
    gb_free(&b);
}

TEST(bad_values)
{
    gb b = {0};
    /* unknown value type 13 at 33 (after key "k") */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, 13);
    gb_u32(&b, 0);
    expect_fail("unknown_value_type", &b, "metadata 'k': unknown value type 13 at byte offset 33",
                NULL);
    gb_free(&b);

    /* bool 2 at 37 */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, GB_BOOL);
    gb_u8(&b, 2);
    expect_fail("bool_value", &b, "bool value 2 at byte offset 37 is not 0 or 1", NULL);
    gb_free(&b);

    /* unknown array element type 99 at 37 */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, GB_ARR);
    gb_u32(&b, 99);
    gb_u64(&b, 0);
    expect_fail("unknown_array_type", &b, "unknown array element type 99 at byte offset 37",
                NULL);
    gb_free(&b);

    /* empty key at 24 */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "");
    gb_u32(&b, GB_U8);
    gb_u8(&b, 0);
    gb_zeros(&b, 8);
    expect_fail("empty_key", &b, "metadata pair 0 at byte offset 24 has an empty key", NULL);
    gb_free(&b);
}

TEST(duplicate_key)
{
    /* "k"=1 at 24 takes 9 + 4 + 4 = 17 bytes, so the second starts at 41 */
    gb b = {0};
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "k", 1);
    gb_kv_u32(&b, "k", 2);
    expect_fail("duplicate_key", &b, "duplicate metadata key 'k' at byte offsets 24 and 41",
                NULL);
    gb_free(&b);
}

TEST(bad_alignment)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 48);
    expect_fail("alignment_48", &b,
                "general.alignment at byte offset 24: value 48 is not a non-zero power of two",
                NULL);
    gb_free(&b);

    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 0);
    expect_fail("alignment_0", &b, "value 0 is not a non-zero power of two", NULL);
    gb_free(&b);

    gb_header(&b, 3, 0, 1);
    gb_kv_str(&b, "general.alignment", "32");
    expect_fail("alignment_string", &b,
                "general.alignment at byte offset 24 has type string, expected uint32", NULL);
    gb_free(&b);
}

TEST(bad_magic_and_version)
{
    gb b = {0};
    gb_put(&b, "GGML", 4); /* bytes 47 47 4d 4c read as a little-endian u32 */
    gb_u32(&b, 3);
    gb_u64(&b, 0);
    gb_u64(&b, 0);
    expect_fail("bad_magic", &b, "bad magic 0x4c4d4747 at byte offset 0", "not a GGUF file");
    gb_free(&b);

    gb_header(&b, 1, 0, 0);
    expect_fail("version_1", &b, "unsupported GGUF version 1 at byte offset 4", NULL);
    gb_free(&b);

    gb_header(&b, 4, 0, 0);
    expect_fail("version_4", &b, "unsupported GGUF version 4 at byte offset 4", NULL);
    gb_free(&b);

    gb_header(&b, 0x03000000, 0, 0); /* version 3 written big-endian */
    expect_fail("version_big_endian", &b, "0x03000000 at byte offset 4", "big-endian");
    gb_free(&b);
}

TEST(tensor_dims)
{
    gb b = {0};
    const uint64_t zero[2] = {4, 0};
    one_tensor(&b, 2, zero, 0, 0, 64);
    expect_fail("zero_dim", &b, "tensor 'a': dimension 1 is zero at byte offset 45", NULL);
    gb_free(&b);

    const uint64_t five[5] = {1, 1, 1, 1, 1};
    one_tensor(&b, 5, five, 0, 0, 64);
    expect_fail("five_dims", &b, "tensor 'a': n_dims 5 at byte offset 33 is not in 1..4", NULL);
    gb_free(&b);

    one_tensor(&b, 0, five, 0, 0, 64);
    expect_fail("zero_dims", &b, "tensor 'a': n_dims 0 at byte offset 33", NULL);
    gb_free(&b);

    /* 2^32 x 2^32 = 2^64 elements: overflows */
    const uint64_t big[2] = {(uint64_t)1 << 32, (uint64_t)1 << 32};
    one_tensor(&b, 2, big, 0, 0, 64);
    expect_fail("dim_product_overflow", &b,
                "tensor 'a': element count of shape [4294967296, 4294967296, 1, 1] at byte "
                "offset 37 overflows",
                NULL);
    gb_free(&b);

    const uint64_t huge[1] = {(uint64_t)1 << 63};
    one_tensor(&b, 1, huge, 0, 0, 64);
    expect_fail("dim_too_big", &b, "dimension 0 = 9223372036854775808 at byte offset 37", NULL);
    gb_free(&b);

    /* f32 bytes of 2^62 elements = 2^64: the element count fits, the bytes not */
    const uint64_t bytes_ovf[2] = {(uint64_t)1 << 31, (uint64_t)1 << 31};
    one_tensor(&b, 2, bytes_ovf, 0, 0, 64);
    expect_fail("byte_size_overflow", &b, "tensor 'a': byte size of 4611686018427387904 f32 "
                                          "elements overflows", NULL);
    gb_free(&b);
}

TEST(tensor_type)
{
    gb b = {0};
    /* n_dims 2: type at 37 + 16 = 53 */
    const uint64_t ne[2] = {32, 2};
    one_tensor(&b, 2, ne, 4 /* removed Q4_2 */, 0, 64);
    expect_fail("type_removed", &b, "tensor 'a': unknown tensor type 4 at byte offset 53", NULL);
    gb_free(&b);

    one_tensor(&b, 2, ne, 1000, 0, 64);
    expect_fail("type_unknown", &b, "tensor 'a': unknown tensor type 1000 at byte offset 53",
                NULL);
    gb_free(&b);

    /* q8_0 blocks hold 32 elements; a row of 16 cannot be stored */
    const uint64_t short_row[1] = {16};
    one_tensor(&b, 1, short_row, 8, 0, 64);
    expect_fail("row_not_block_multiple", &b,
                "tensor 'a': row length ne[0] = 16 is not a multiple of the q8_0 block size 32",
                "byte offset 24");
    gb_free(&b);
}

TEST(tensor_offsets)
{
    gb b = {0};
    /* n_dims 1: ne at 37, type at 45, offset at 49 */
    const uint64_t ne[1] = {8}; /* f32: 32 bytes */
    one_tensor(&b, 1, ne, 0, 8, 64);
    expect_fail("misaligned_offset", &b,
                "tensor 'a': data offset 8 at byte offset 49 is not a multiple of the "
                "alignment 32",
                NULL);
    gb_free(&b);

    /* infos end at 24 + 33 = 57, data section at 64; [64, 96) needs 32 bytes
     * but only 16 follow: the file has 80 bytes */
    one_tensor(&b, 1, ne, 0, 0, 16);
    expect_fail("past_end", &b, "tensor 'a': data [64, 96) lies past end of file (80 bytes)",
                NULL);
    gb_free(&b);

    one_tensor(&b, 1, ne, 0, 1024, 64);
    expect_fail("offset_past_end", &b,
                "tensor 'a': data [1088, 1120) lies past end of file (128 bytes)", NULL);
    gb_free(&b);

    /* 64 + (2^64 - 32) overflows */
    one_tensor(&b, 1, ne, 0, UINT64_MAX - 31, 64);
    expect_fail("offset_overflow", &b, "tensor 'a': data offset 18446744073709551584",
                "overflows 64 bits");
    gb_free(&b);
}

TEST(overlapping_tensors)
{
    /* infos: a at 24 (33 bytes), b at 57 (33 bytes) -> 90 -> data at 96.
     * a = f32[16] at 0: [96, 160); b = f32[8] at 32: [128, 160) */
    gb b = {0};
    const uint64_t ne_a[1] = {16}, ne_b[1] = {8};
    gb_header(&b, 3, 2, 0);
    gb_tinfo(&b, "a", 1, ne_a, 0, 0);
    gb_tinfo(&b, "b", 1, ne_b, 0, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    expect_fail("overlap", &b, "tensor 'b': data [128, 160) overlaps tensor 'a' data [96, 160)",
                NULL);
    gb_free(&b);
}

TEST(duplicate_tensor_name)
{
    gb b = {0};
    const uint64_t ne[1] = {8};
    gb_header(&b, 3, 2, 0);
    gb_tinfo(&b, "a", 1, ne, 0, 0);
    gb_tinfo(&b, "a", 1, ne, 0, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    expect_fail("duplicate_tensor", &b,
                "duplicate tensor name 'a' (tensor infos at byte offsets 24 and 57)", NULL);
    gb_free(&b);

    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "", 1, ne, 0, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, 32);
    expect_fail("empty_tensor_name", &b, "tensor info 0 at byte offset 24 has an empty name",
                NULL);
    gb_free(&b);
}

TEST(hostile_names_are_escaped)
{
    /* a control byte in a tensor name must not reach the message raw */
    gb b = {0};
    const uint64_t ne[1] = {0};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "x\ny", 1, ne, 0, 0);
    expect_fail("escaped_name", &b, "tensor 'x\\x0ay': dimension 0 is zero", NULL);
    gb_free(&b);
}

int main(void)
{
    RUN(builder_makes_valid_files);
    RUN(truncated_header);
    RUN(every_prefix_of_a_valid_file_fails_cleanly);
    RUN(huge_tensor_count);
    RUN(huge_kv_count);
    RUN(string_length_overflow);
    RUN(array_count_overflow);
    RUN(nested_array_too_deep);
    RUN(bad_values);
    RUN(duplicate_key);
    RUN(bad_alignment);
    RUN(bad_magic_and_version);
    RUN(tensor_dims);
    RUN(tensor_type);
    RUN(tensor_offsets);
    RUN(overlapping_tensors);
    RUN(duplicate_tensor_name);
    RUN(hostile_names_are_escaped);
    return TEST_REPORT();
}
