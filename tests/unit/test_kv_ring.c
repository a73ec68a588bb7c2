/* test_kv_ring.c - the sliding-window ring's sizes (issue 19): the ring's
 * capacity (the window and one micro-batch, stored twice: kv_ring.h; none
 * when twice that is not below the context) and the KV bytes of a model at
 * a context length, with and without the ring. Expected values are
 * computed by hand from the shapes below (f16: 2 bytes, q8_0: 34 bytes per
 * 32 values). */
#include <stdint.h>
#include <stdlib.h>

#include "engine/session_layout.h"
#include "test.h"

/* n_layer attention layers of n_head_kv heads of head_dim, window n_swa on
 * the even layers (gpt-oss's pattern), the whole context on the odd. */
static sl_model *swa_model(int n_layer, int n_head_kv, int head_dim, int n_swa)
{
    sl_model *m = calloc(1, sizeof *m);
    m->layers = calloc((size_t)n_layer, sizeof *m->layers);
    sl_hparams *hp = &m->hp;
    hp->n_layer = n_layer;
    hp->n_embd = 64; /* unread by the KV sizes */
    hp->n_head = hp->n_head_kv = n_head_kv;
    hp->head_dim = hp->head_dim_v = head_dim;
    hp->n_vocab = 16;
    for (int il = 0; il < n_layer; il++)
        m->layers[il].d.attn = (sl_attn_desc){.n_head = n_head_kv, .n_head_kv = n_head_kv,
                                              .head_dim = head_dim, .head_dim_v = head_dim,
                                              .n_swa = il % 2 == 0 ? n_swa : 0};
    return m;
}

static void swa_free(sl_model *m)
{
    free(m->layers);
    free(m);
}

TEST(ring_capacity_is_the_window_plus_a_batch_when_twice_it_saves_memory)
{
    CHECK_EQ_INT((long long)sl_kv_ring_cap(128, 4096, 512), 639);
    CHECK_EQ_INT((long long)sl_kv_ring_cap(8, 4096, 1), 8);     /* decode: the window */
    CHECK_EQ_INT((long long)sl_kv_ring_cap(128, 100, 512), 0);  /* context shorter */
    CHECK_EQ_INT((long long)sl_kv_ring_cap(128, 1278, 512), 0); /* 2 x 639: no saving */
    CHECK_EQ_INT((long long)sl_kv_ring_cap(128, 1279, 512), 639);
    CHECK_EQ_INT((long long)sl_kv_ring_cap(0, 4096, 512), 0);   /* no window */
    CHECK_EQ_INT((long long)sl_kv_ring_cap(1 << 24, 1 << 24, 1 << 16), 0);
}

TEST(kv_bytes_at_a_context_with_and_without_the_ring)
{
    /* gpt-oss-120b's attention: 36 layers, 8 KV heads of 64, window 128 on half */
    sl_model *m = swa_model(36, 8, 64, 128);
    uint64_t full = 0, ring = 0;
    CHECK(sl_session_kv_bytes_at(m, SL_KV_F16, SL_KV_F16, 4096, 512, false, &full));
    CHECK(sl_session_kv_bytes_at(m, SL_KV_F16, SL_KV_F16, 4096, 512, true, &ring));
    const long long row = 8 * 64 * 2; /* one f16 K (or V) row of a layer */
    CHECK_EQ_INT((long long)full, 36LL * 2 * row * 4096);
    CHECK_EQ_INT((long long)ring, 18LL * 2 * row * 4096 + 18LL * 2 * row * 2 * 639);
    /* q8_0 K, f16 V, decode batches: a ring of 128, stored twice */
    CHECK(sl_session_kv_bytes_at(m, SL_KV_Q8_0, SL_KV_F16, 32768, 1, true, &ring));
    CHECK_EQ_INT((long long)ring, 18LL * (8 * 2 * 34 + row) * 32768 + 18LL * (8 * 2 * 34 + row) * 256);
    /* a short context: no ring, every position */
    CHECK(sl_session_kv_bytes_at(m, SL_KV_F16, SL_KV_F16, 1024, 512, true, &ring));
    CHECK_EQ_INT((long long)ring, 36LL * 2 * row * 1024);
    swa_free(m);
}

TEST(kv_bytes_overflow_is_reported)
{
    sl_model *m = swa_model(2, 1 << 20, 1 << 10, 0);
    uint64_t b = 0;
    /* 2 layers x 2 streams x 2^32 bytes a row x 2^24 rows = 2^58: fits */
    CHECK(sl_session_kv_bytes_at(m, SL_KV_F32, SL_KV_F32, 1 << 24, 1, false, &b));
    swa_free(m);
    m = swa_model(2, 1 << 30, 1 << 10, 0); /* 2^42 bytes a row x 2^24 rows: past 2^64 */
    CHECK(!sl_session_kv_bytes_at(m, SL_KV_F32, SL_KV_F32, 1 << 24, 1, false, &b));
    swa_free(m);
}

int main(void)
{
    RUN(ring_capacity_is_the_window_plus_a_batch_when_twice_it_saves_memory);
    RUN(kv_bytes_at_a_context_with_and_without_the_ring);
    RUN(kv_bytes_overflow_is_reported);
    return TEST_REPORT();
}
