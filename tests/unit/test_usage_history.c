/* test_usage_history.c - the per-model expert usage history (warm start):
 * a saved history loads back with every score (decayed as asked), decay
 * compounds over runs, the hottest experts come out in order, a damaged
 * file (truncated, a changed digit, another model, another shape, text
 * after the end) is refused with a message naming the line, a missing one
 * is an empty history, and a save that fails half way leaves the old file
 * whole and no temporary file behind. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "experts/usage_history.h"
#include "test.h"

#define L 3
#define X 5
#define ID "model-1.gguf-00aa"

static sl_usage *fresh(void)
{
    sl_usage *u = NULL;
    sl_err err;
    CHECK(sl_usage_create(&u, ID, L, X, &err) == SL_OK);
    return u;
}

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc(1 << 16);
    *len = fread(b, 1, (1 << 16) - 1, f);
    b[*len] = '\0';
    fclose(f);
    return b;
}

static void write_text(const char *path, const char *t, size_t len)
{
    FILE *f = fopen(path, "wb");
    fwrite(t, 1, len, f);
    fclose(f);
}

TEST(round_trip_and_decay)
{
    sl_usage *u = fresh();
    if (!u) return;
    /* values exact in binary and in "%.9g" */
    sl_usage_add(u, 0, 1, 3.0);
    sl_usage_add(u, 2, 4, 0.25);
    sl_usage_add(u, 2, 4, 1.0);
    sl_usage_add(u, 1, 0, 1e6);
    char path[512];
    t_path(path, sizeof path, "rt.usage");
    sl_err err;
    CHECK(sl_usage_save(u, path, 0, &err) == SL_OK);
    sl_usage *v = NULL;
    bool found = false;
    CHECK(sl_usage_load(&v, &found, path, ID, L, X, 1.0, &err) == SL_OK);
    CHECK(found);
    if (!v) {
        sl_usage_free(u);
        return;
    }
    for (int l = 0; l < L; l++)
        for (int e = 0; e < X; e++) CHECK(sl_usage_get(v, l, e) == sl_usage_get(u, l, e));
    CHECK(sl_usage_get(v, 2, 4) == 1.25);
    CHECK(sl_usage_get(v, 0, 0) == 0.0);
    sl_usage_free(v);
    /* a new run sees the old uses at half weight, and adds its own at 1 */
    CHECK(sl_usage_load(&v, &found, path, ID, L, X, 0.5, &err) == SL_OK);
    CHECK(sl_usage_get(v, 0, 1) == 1.5);
    CHECK(sl_usage_get(v, 1, 0) == 5e5);
    sl_usage_add(v, 0, 1, 1.0);
    CHECK(sl_usage_save(v, path, 0, &err) == SL_OK);
    sl_usage_free(v);
    /* and the run after that: (3 * 0.5 + 1) * 0.5 */
    CHECK(sl_usage_load(&v, &found, path, ID, L, X, 0.5, &err) == SL_OK);
    CHECK(v && sl_usage_get(v, 0, 1) == 1.25);
    CHECK(v && sl_usage_get(v, 2, 4) == 0.3125);
    sl_usage_free(v);
    sl_usage_free(u);
}

TEST(hottest_first)
{
    sl_usage *u = fresh();
    if (!u) return;
    sl_usage_add(u, 1, 2, 5.0);
    sl_usage_add(u, 0, 4, 9.0);
    sl_usage_add(u, 2, 0, 5.0); /* ties with (1, 2): the lower layer first */
    sl_usage_add(u, 2, 3, 1.0);
    int ls[16], es[16];
    const int n = sl_usage_top(u, 16, ls, es);
    CHECK_EQ_INT(n, 4); /* only experts with uses */
    CHECK(ls[0] == 0 && es[0] == 4);
    CHECK(ls[1] == 1 && es[1] == 2);
    CHECK(ls[2] == 2 && es[2] == 0);
    CHECK(ls[3] == 2 && es[3] == 3);
    CHECK_EQ_INT(sl_usage_top(u, 2, ls, es), 2);
    sl_usage_free(u);
}

TEST(missing_file_is_an_empty_history)
{
    char path[512];
    t_path(path, sizeof path, "none.usage");
    sl_usage *v = NULL;
    bool found = true;
    sl_err err;
    CHECK(sl_usage_load(&v, &found, path, ID, L, X, 0.5, &err) == SL_OK);
    CHECK(!found && v != NULL);
    int ls[4], es[4];
    if (v) CHECK_EQ_INT(sl_usage_top(v, 4, ls, es), 0);
    sl_usage_free(v);
}

/* the good file's text with one change applied, loaded: must fail naming
 * what is wrong */
static void expect_refused(const char *good, size_t len, const char *name,
                           void (*change)(char *t, size_t *len), const char *id, int nl,
                           const char *says)
{
    char path[512];
    t_path(path, sizeof path, name);
    char *t = malloc(len + 64);
    memcpy(t, good, len + 1);
    size_t n = len;
    if (change) change(t, &n);
    write_text(path, t, n);
    free(t);
    sl_usage *v = (sl_usage *)1;
    bool found = true;
    sl_err err = {0};
    const int rc = sl_usage_load(&v, &found, path, id, nl, X, 0.5, &err);
    CHECK_MSG(rc == SL_EFORMAT, "%s: rc %d", name, rc);
    CHECK(v == NULL);
    CHECK_STR_CONTAINS(err.msg, path);
    CHECK_STR_CONTAINS(err.msg, says);
}

static void truncate_half(char *t, size_t *len) { *len /= 2; }
static void change_digit(char *t, size_t *len)
{
    /* the first score's digit 7 becomes 8: still well formed */
    char *p = strstr(t, "\n7");
    if (p) p[1] = '8';
}
static void add_tail(char *t, size_t *len)
{
    memcpy(t + *len, "0 0\n", 5);
    *len += 4;
}

TEST(damaged_file_is_refused)
{
    sl_usage *u = fresh();
    if (!u) return;
    sl_usage_add(u, 0, 0, 7.0);
    sl_usage_add(u, 1, 3, 2.0);
    char path[512];
    t_path(path, sizeof path, "good.usage");
    sl_err err;
    CHECK(sl_usage_save(u, path, 0, &err) == SL_OK);
    sl_usage_free(u);
    size_t len = 0;
    char *good = read_text(path, &len);
    CHECK(good != NULL && len > 0);
    if (!good) return;
    CHECK(strstr(good, "\n7") != NULL);
    expect_refused(good, len, "cut.usage", truncate_half, ID, L, "line");
    expect_refused(good, len, "digit.usage", change_digit, ID, L, "checksum");
    expect_refused(good, len, "tail.usage", add_tail, ID, L, "after the 'end' line");
    expect_refused(good, len, "other.usage", NULL, "other-model", L, "another model");
    expect_refused(good, len, "shape.usage", NULL, ID, L + 1, "3 layers x 5 experts");
    free(good);
}

/* every file in the test directory whose name contains "crash" */
static int files_named_like(const char *part)
{
    DIR *d = opendir(t_tmpdir());
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, part)) n++;
    if (d) closedir(d);
    return n;
}

TEST(failed_save_keeps_the_old_file)
{
    sl_usage *u = fresh();
    if (!u) return;
    sl_usage_add(u, 2, 2, 4.0);
    char path[512];
    t_path(path, sizeof path, "crash.usage");
    sl_err err;
    CHECK(sl_usage_save(u, path, 0, &err) == SL_OK);
    size_t len0 = 0, len1 = 0;
    char *before = read_text(path, &len0);
    sl_usage_add(u, 0, 0, 100.0);
    err.msg[0] = '\0';
    CHECK(sl_usage_save(u, path, SL_USAGE_TEST_FAIL_WRITE, &err) == SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "crash.usage");
    char *after = read_text(path, &len1);
    CHECK(before && after && len0 == len1 && memcmp(before, after, len0) == 0);
    CHECK_EQ_INT(files_named_like("crash"), 1); /* no temporary left */
    sl_usage *v = NULL;
    bool found = false;
    CHECK(sl_usage_load(&v, &found, path, ID, L, X, 1.0, &err) == SL_OK);
    CHECK(v && sl_usage_get(v, 2, 2) == 4.0 && sl_usage_get(v, 0, 0) == 0.0);
    sl_usage_free(v);
    free(before);
    free(after);
    sl_usage_free(u);
}

TEST(bad_ids_and_shapes_are_refused)
{
    sl_usage *u = NULL;
    sl_err err;
    CHECK(sl_usage_create(&u, "has space", L, X, &err) == SL_EINVAL && u == NULL);
    CHECK(sl_usage_create(&u, "", L, X, &err) == SL_EINVAL);
    CHECK(sl_usage_create(&u, "../up", L, X, &err) == SL_EINVAL);
    CHECK(sl_usage_create(&u, ID, 0, X, &err) == SL_EINVAL);
}

int main(void)
{
    RUN(round_trip_and_decay);
    RUN(hottest_first);
    RUN(missing_file_is_an_empty_history);
    RUN(damaged_file_is_refused);
    RUN(failed_save_keeps_the_old_file);
    RUN(bad_ids_and_shapes_are_refused);
    return TEST_REPORT();
}
