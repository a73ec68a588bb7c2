/* test_kv_heads.c - the head-major K/V stream (kv_ring.h, issue 19): where
 * head h of position p is stored (each head's rows one after another,
 * whole context and mirrored ring), the kernels' base + p * stride
 * addressing of one head, and whole position-major rows through
 * sl_kv_rows_put / sl_kv_rows_get (what session files hold). Expected
 * offsets are written out by hand from the layout rule, not computed by
 * the code under test. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_ring.h"
#include "test.h"

/* A stream of 3 heads of 4 bytes (a 12-byte row) in slots of st. */
static sl_layer_state stream(uint8_t *buf, int ring_cap, size_t n_slots)
{
    sl_layer_state st;
    memset(&st, 0, sizeof st);
    st.rows[0] = buf;
    st.row_bytes[0] = 12;
    st.heads[0] = 3;
    st.n_slots = n_slots;
    st.ring_cap = ring_cap;
    return st;
}

TEST(head_rows_lie_together_per_head)
{
    uint8_t buf[3 * 10 * 4];
    sl_layer_state st = stream(buf, 0, 10);
    CHECK_EQ_INT(sl_kv_head_bytes(&st, 0), 4);
    /* head h, position p at (h * 10 + p) * 4 */
    CHECK(sl_kv_head_row(&st, 0, 0, 0) == buf);
    CHECK(sl_kv_head_row(&st, 0, 0, 7) == buf + 28);
    CHECK(sl_kv_head_row(&st, 0, 1, 0) == buf + 40);
    CHECK(sl_kv_head_row(&st, 0, 2, 9) == buf + 116);
    CHECK(sl_kv_head_mirror(&st, 0, 1, 3) == NULL);
    /* a kernel reads head 2 from base + p * 4 */
    const uint8_t *b = sl_kv_head_base(&st, 0, 2, 0);
    CHECK(b + 5 * 4 == buf + 100);
}

TEST(ring_heads_keep_both_copies_per_head)
{
    /* ring of 4: 8 slots per head; position 9 in slots 1 and 5 */
    uint8_t buf[3 * 8 * 4];
    sl_layer_state st = stream(buf, 4, 8);
    CHECK(sl_kv_head_row(&st, 0, 1, 9) == buf + (8 + 1) * 4);
    CHECK(sl_kv_head_mirror(&st, 0, 1, 9) == buf + (8 + 5) * 4);
    /* positions 6..9 from base: slots 2, 3, 4, 5 of head 2 */
    const uintptr_t b = (uintptr_t)sl_kv_head_base(&st, 0, 2, 6);
    CHECK(b + 6 * 4 == (uintptr_t)(buf + (16 + 2) * 4));
    CHECK(b + 9 * 4 == (uintptr_t)(buf + (16 + 5) * 4));
}

TEST(whole_rows_round_trip_in_position_order)
{
    for (int ring = 0; ring <= 4; ring += 4) {
        uint8_t buf[3 * 10 * 4], rows[5 * 12], back[5 * 12];
        memset(buf, 0xEE, sizeof buf);
        sl_layer_state st = stream(buf, ring, ring ? 8 : 10);
        const int n = ring ? 4 : 5; /* a ring holds ring_cap consecutive positions */
        for (int i = 0; i < (int)sizeof rows; i++) rows[i] = (uint8_t)i;
        sl_kv_rows_put(&st, 0, 3, n, rows); /* positions 3 .. 3 + n - 1 */
        /* position 5's head 1 is bytes 2 x 12 + 4 .. of the rows given */
        const uint8_t *h = sl_kv_head_row(&st, 0, 1, 5);
        for (int i = 0; i < 4; i++) CHECK_EQ_INT(h[i], 28 + i);
        if (ring) { /* the mirror holds the same bytes */
            CHECK(memcmp(sl_kv_head_mirror(&st, 0, 1, 5), h, 4) == 0);
            CHECK(memcmp(sl_kv_head_mirror(&st, 0, 2, 6), sl_kv_head_row(&st, 0, 2, 6), 4) == 0);
        }
        memset(back, 0, sizeof back);
        sl_kv_rows_get(&st, 0, 3, n, back);
        CHECK(memcmp(back, rows, (size_t)n * 12) == 0);
    }
}

int main(void)
{
    RUN(head_rows_lie_together_per_head);
    RUN(ring_heads_keep_both_copies_per_head);
    RUN(whole_rows_round_trip_in_position_order);
    return TEST_REPORT();
}
