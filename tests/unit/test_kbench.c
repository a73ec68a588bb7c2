/* test_kbench.c - the pieces of `sluice bench --kernels --kernel-types`
 * (ops/kbench.h): the order statistics its table reports, against values
 * worked out by hand; the items it times (a matvec item's outputs on the
 * x8 layout equal, bit for bit, those of the plain layout, so splitting
 * rows in whole groups computes the same product; a read item has none);
 * the rounds fill every (round, item) figure; and the refusals. */
#include <math.h>
#include <string.h>

#include "ops/kbench.h"
#include "test.h"

TEST(order_statistics_by_hand)
{
    const double odd[] = {3.0, 1.0, 2.0};
    const double even[] = {4.0, 1.0, 3.0, 2.0};
    const double five[] = {5.0, 4.0, 3.0, 2.0, 1.0};
    CHECK_NEAR(sl_kbench_median(odd, 3, 1), 2.0, 0.0);
    CHECK_NEAR(sl_kbench_median(even, 4, 1), 2.5, 0.0);
    CHECK_NEAR(sl_kbench_quantile(five, 5, 1, 0.0), 1.0, 0.0);
    CHECK_NEAR(sl_kbench_quantile(five, 5, 1, 1.0), 5.0, 0.0);
    CHECK_NEAR(sl_kbench_quantile(five, 5, 1, 0.25), 2.0, 0.0);
    /* between neighbours: 0.1 of the way from 1 (rank 0) to 2 (rank 1) */
    CHECK_NEAR(sl_kbench_quantile(five, 5, 1, 0.025), 1.1, 1e-12);
    /* a column of a rounds x items table: items 1 of {10,1},{30,3},{20,2} */
    const double table[] = {10.0, 1.0, 30.0, 3.0, 20.0, 2.0};
    CHECK_NEAR(sl_kbench_median(table + 1, 3, 2), 2.0, 0.0);
    CHECK_NEAR(sl_kbench_median(table, 3, 2), 20.0, 0.0);
    CHECK_NEAR(sl_kbench_median(table, 0, 1), 0.0, 0.0);
    /* the input is left as it was */
    CHECK(odd[0] == 3.0 && odd[1] == 1.0 && odd[2] == 2.0);
}

TEST(x8_item_equals_plain_item)
{
    static const sl_type types[] = {SL_TYPE_MXFP4, SL_TYPE_Q4_0, SL_TYPE_IQ4_NL};
    sl_pool *pool;
    sl_err err;
    CHECK(sl_pool_create(&pool, 3, &err) == SL_OK);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const sl_type_traits *tr = sl_type_get(types[k]);
        /* 4096 columns: 64 groups of 8 rows exactly, so both forms have
         * the same 512 rows (4 chunks of 16 groups over 3 threads) */
        const size_t bytes = 512 * (size_t)(4096 / tr->block_size * tr->type_size);
        sl_kbench_item *plain, *x8;
        CHECK(sl_kbench_item_matvec(&plain, types[k], false, bytes, 3, &err) == SL_OK);
        CHECK(sl_kbench_item_matvec(&x8, types[k], true, bytes, 3, &err) == SL_OK);
        CHECK(sl_kbench_item_run(plain, pool) > 0.0);
        CHECK(sl_kbench_item_run(x8, pool) > 0.0);
        long long rp, rx;
        const float *yp = sl_kbench_item_y(plain, &rp), *yx = sl_kbench_item_y(x8, &rx);
        CHECK_EQ_INT(rp, 512);
        CHECK_EQ_INT(rx, 512);
        CHECK(memcmp(yp, yx, sizeof(float) * 512) == 0);
        /* the rows are copies of one row: every output is the first one,
         * and it is not zero (the product was computed) */
        CHECK(yp[0] != 0.0f);
        for (int r = 1; r < 512; r++) CHECK(memcmp(&yp[r], &yp[0], sizeof(float)) == 0);
        sl_kbench_item_free(plain);
        sl_kbench_item_free(x8);
    }
    sl_pool_free(pool);
}

TEST(rounds_fill_every_figure)
{
    sl_pool *pool;
    sl_err err;
    CHECK(sl_pool_create(&pool, 2, &err) == SL_OK);
    sl_kbench_item *items[3];
    CHECK(sl_kbench_item_read(&items[0], 1 << 20, &err) == SL_OK);
    CHECK(sl_kbench_item_matvec(&items[1], SL_TYPE_Q4_K, false, 1 << 20, 2, &err) == SL_OK);
    CHECK(sl_kbench_item_matvec(&items[2], SL_TYPE_MXFP4, true, 1 << 20, 2, &err) == SL_OK);
    long long rows;
    CHECK(sl_kbench_item_y(items[0], &rows) == NULL && rows == 0);
    enum { R = 5 };
    double g[R * 3];
    for (int i = 0; i < R * 3; i++) g[i] = -1.0;
    sl_kbench_rounds(pool, items, 3, R, g);
    for (int i = 0; i < R * 3; i++) CHECK(g[i] > 0.0);
    for (int i = 0; i < 3; i++) sl_kbench_item_free(items[i]);
    sl_kbench_item_free(NULL);
    sl_pool_free(pool);
}

TEST(refusals)
{
    sl_err err;
    sl_kbench_item *it = (sl_kbench_item *)&err;
    /* Q4_K has no x8 layout */
    CHECK(sl_kbench_item_matvec(&it, SL_TYPE_Q4_K, true, 1 << 20, 1, &err) == SL_EUNSUPPORTED);
    CHECK(it == NULL);
    CHECK_STR_CONTAINS(err.msg, "x8");
}

int main(void)
{
    RUN(order_statistics_by_hand);
    RUN(x8_item_equals_plain_item);
    RUN(rounds_fill_every_figure);
    RUN(refusals);
    return TEST_REPORT();
}
