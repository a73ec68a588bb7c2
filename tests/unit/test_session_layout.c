/* test_session_layout.c - sizing a session's memory from the model
 * (engine/session_layout.c): sizes from file values computed in 64 bits
 * (issue 10, D2: top-k x expert width overflowed an int), an overflow of
 * 64 bits refused, and the guard zones that stop a test at the buffer a
 * sizing mistake overran. The models here are hyperparameters only (no
 * tensors), as a file declares them before any weight is read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/session_layout.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif
#ifdef T_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* A model of hyperparameters only (every tensor absent), its layers
 * described as attention layers. */
static sl_model *bare_model(int n_layer, int n_embd, int n_head, int head_dim, int n_expert,
                            int n_expert_used, int n_ff_exp, int n_vocab)
{
    sl_model *m = calloc(1, sizeof *m);
    m->layers = calloc((size_t)n_layer, sizeof *m->layers);
    sl_hparams *hp = &m->hp;
    hp->n_layer = n_layer;
    hp->n_embd = n_embd;
    hp->n_head = hp->n_head_kv = n_head;
    hp->head_dim = hp->head_dim_v = head_dim;
    hp->n_expert = n_expert;
    hp->n_expert_used = n_expert_used;
    hp->n_ff_exp = n_ff_exp;
    hp->n_vocab = n_vocab;
    for (int il = 0; il < n_layer; il++) /* attention layers, as the loader describes them */
        m->layers[il].d.attn = (sl_attn_desc){.n_head = n_head, .n_head_kv = n_head,
                                              .head_dim = head_dim, .head_dim_v = head_dim};
    return m;
}

static void bare_free(sl_model *m)
{
    free(m->layers);
    free(m);
}

TEST(expert_width_times_top_k_is_computed_in_64_bits)
{
    /* top-4096 of experts 2^20 wide: 2^32 SwiGLU values a token */
    sl_model *m = bare_model(2, 64, 4, 16, 4096, 4096, 1 << 20, 1000);
    const sl_session_dims d = {.n_batch = 2, .n_ctx = 16, .n_threads = 1, .n_logit_rows = 1};
    sl_session_layout lay;
    sl_err err;
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), 0);
    const uint64_t want = 4ull * 2 * 4096 * (1ull << 20); /* floats x batch x K x width */
    CHECK_MSG(lay.bytes[SL_SB_hb] == want, "hb %llu, want %llu",
              (unsigned long long)lay.bytes[SL_SB_hb], (unsigned long long)want);
    CHECK(lay.arena_bytes > 2 * want); /* hb and hb2 */
    bare_free(m);
}

TEST(sizes_beyond_64_bits_are_refused)
{
    /* K/V of 4096 layers x 2^24 positions x 4096 heads x 65536 values */
    sl_model *m = bare_model(4096, 64, 4096, 65536, 0, 0, 0, 1000);
    const sl_session_dims d = {.n_batch = 1, .n_ctx = 1 << 24, .n_threads = 1,
                               .n_logit_rows = 1};
    sl_session_layout lay;
    sl_err err;
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), SL_ENOMEM);
    CHECK_STR_CONTAINS(err.msg, "does not fit in memory");
    CHECK_STR_CONTAINS(err.msg, "4096 layers");
    bare_free(m);
}

TEST(int_indices_of_the_forward_pass_stay_in_range)
{
    /* 65536 tokens x top-65536 (token, rank) rows would not fit an int */
    sl_model *m = bare_model(1, 64, 4, 16, 65536, 65536, 64, 1000);
    const sl_session_dims d = {.n_batch = 65536, .n_ctx = 16, .n_threads = 1,
                               .n_logit_rows = 1};
    sl_session_layout lay;
    sl_err err;
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), SL_ENOMEM);
    bare_free(m);
}

TEST(absurd_dimensions_are_invalid)
{
    sl_model *m = bare_model(1, 64, 4, 16, 0, 0, 0, 1000);
    sl_session_layout lay;
    sl_err err;
    const sl_session_dims bad[] = {
        {.n_batch = 0, .n_ctx = 16, .n_threads = 1, .n_logit_rows = 1},
        {.n_batch = 4, .n_ctx = 0, .n_threads = 1, .n_logit_rows = 1},
        {.n_batch = 4, .n_ctx = 16, .n_threads = 0, .n_logit_rows = 1},
        {.n_batch = 4, .n_ctx = 16, .n_threads = 1, .n_logit_rows = 5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(sl_session_layout_make(&lay, m, &bad[i], &err), SL_EINVAL);
    bare_free(m);
}

/* Buffers are aligned, in order, never overlap, and each is followed by a
 * guard of at least SL_SESSION_GUARD bytes. */
TEST(buffers_are_disjoint_and_guarded)
{
    sl_model *m = bare_model(3, 96, 6, 16, 8, 2, 40, 333);
    const sl_session_dims d = {.n_batch = 7, .n_ctx = 33, .n_threads = 3, .n_logit_rows = 7};
    sl_session_layout lay;
    sl_err err;
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), 0);
    for (int b = 0; b < SL_SB_COUNT; b++) {
        CHECK_EQ_INT(lay.offset[b] % SL_SESSION_GUARD, 0);
        const uint64_t next = b + 1 < SL_SB_COUNT ? lay.offset[b + 1] : lay.arena_bytes;
        CHECK_MSG(lay.offset[b] + lay.bytes[b] + SL_SESSION_GUARD <= next, "buffer %s",
                  sl_session_buffer_name((sl_sbuf)b));
    }
    CHECK_EQ_INT(lay.bytes[SL_SB_logits], 4 * 7 * 333);
    /* per thread, one attention block's scratch, nothing per context
     * position: the larger of one token's tiles (a K and a V tile of 64
     * positions, their scores, the group's (1 head) accumulator, max and
     * sum: 64 * 33 + 18 = 2130 floats) and a query block of 16 tokens (the
     * K tile [64][16], then per token the group's heads padded to 8 lanes
     * times (16 query values + 64 scores) plus the accumulator, max and
     * sum: 1024 + 16 * (8 * 80 + 18) = 11552 floats) */
    CHECK_EQ_INT(lay.bytes[SL_SB_att], 4 * 3 * (64 * 16 + 16 * (8 * (16 + 64) + 1 * (16 + 2))));
    CHECK_EQ_INT(lay.att_floats, 64 * 16 + 16 * (8 * (16 + 64) + 1 * (16 + 2)));
    CHECK_EQ_INT(lay.kv_bytes, 2 * (2ull * 3 * 33 * 6 * 16));
    CHECK_EQ_INT(lay.scratch_bytes, lay.arena_bytes - lay.kv_bytes);
    bare_free(m);
}

/* A write past a buffer's end lands in its guard: seen by the check (or,
 * under ASan, the guard is poisoned so the write itself is reported). */
TEST(a_write_past_a_buffer_is_caught)
{
    sl_model *m = bare_model(2, 64, 4, 16, 4, 2, 32, 300);
    const sl_session_dims d = {.n_batch = 4, .n_ctx = 8, .n_threads = 2, .n_logit_rows = 1};
    sl_session_layout lay;
    sl_err err;
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), 0);
    uint8_t *arena = aligned_alloc(SL_SESSION_GUARD, (size_t)lay.arena_bytes);
    CHECK(arena != NULL);
    if (!arena) return;
    sl_session_guards_arm(&lay, arena);
    const uint64_t end = lay.offset[SL_SB_act] + lay.bytes[SL_SB_act];
    arena[end - 1] = 1; /* the buffer's own last byte: fine */
    CHECK_EQ_INT(sl_session_guards_check(&lay, arena), SL_SB_COUNT);
#ifdef T_ASAN
    CHECK(__asan_address_is_poisoned(arena + end));
    CHECK(!__asan_address_is_poisoned(arena + end - 1));
#else
    arena[end] = 0; /* one byte too far */
    CHECK_EQ_INT(sl_session_guards_check(&lay, arena), SL_SB_act);
#endif
    sl_session_guards_disarm(&lay, arena);
    free(arena);
    bare_free(m);
}

/* The mixers' own scratch (kind_scratch) is as large as the largest need
 * any layer's mixer declares, not the sum of every kind's: a gated
 * attention layer's gates (B, n_head head_dim) and a gated DeltaNet
 * layer's five pieces, B (channels + 2 nv ds + 2 nv), share it. */
TEST(kind_scratch_is_the_largest_mixer_need)
{
    sl_model *m = bare_model(2, 64, 4, 16, 0, 0, 0, 100);
    m->layers[0].d.attn.gated = true;
    const sl_session_dims d = {.n_batch = 3, .n_ctx = 16, .n_threads = 1, .n_logit_rows = 1};
    sl_session_layout lay;
    sl_err err;
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), 0);
    CHECK_EQ_INT(lay.bytes[SL_SB_kind_scratch], 4 * 3 * 4 * 16); /* the gates only */

    m->layers[1].d.mixer = SL_MIXER_GDN;
    m->layers[1].d.gdn = (sl_gdn_desc){.n_qk = 2, .n_v = 4, .d_state = 8, .conv_k = 4};
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), 0);
    const int channels = (2 * 2 + 4) * 8, vd = 4 * 8, nv = 4;
    CHECK_EQ_INT(lay.bytes[SL_SB_kind_scratch], 4 * 3 * (channels + 2 * vd + 2 * nv));

    m->layers[0].d.attn.gated = false; /* plain attention needs none */
    m->layers[1].d = m->layers[0].d;
    CHECK_EQ_INT(sl_session_layout_make(&lay, m, &d, &err), 0);
    CHECK_EQ_INT(lay.bytes[SL_SB_kind_scratch], 0);
    bare_free(m);
}

int main(void)
{
    RUN(expert_width_times_top_k_is_computed_in_64_bits);
    RUN(sizes_beyond_64_bits_are_refused);
    RUN(int_indices_of_the_forward_pass_stay_in_range);
    RUN(absurd_dimensions_are_invalid);
    RUN(buffers_are_disjoint_and_guarded);
    RUN(a_write_past_a_buffer_is_caught);
    RUN(kind_scratch_is_the_largest_mixer_need);
    return TEST_REPORT();
}
