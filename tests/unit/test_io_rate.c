/* test_io_rate.c - a drive's kept iobench rate (io/io_rate.h): a saved file
 * loads back with every row, the rate for a lane count is found (and 0 for
 * one never measured), a missing file is "not found", a damaged one (a
 * changed digit, a bad header, a truncated end, text after it) is refused
 * naming its line, values that are not rates are refused at save, and the
 * curve's best point and the fewest lanes near it are found. */
#include <stdio.h>
#include <string.h>

#include "common/testutil.h"
#include "io/io_rate.h"
#include "test.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static size_t read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    const size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

static sl_io_rate sample(void)
{
    sl_io_rate r;
    memset(&r, 0, sizeof r);
    snprintf(r.device, sizeof r.device, "dev-254-0");
    r.when = 1796000000;
    r.n = 2;
    r.lanes[0] = 4;
    r.mib_s[0] = 3142.5;
    r.lanes[1] = 8;
    r.mib_s[1] = 4094.25;
    return r;
}

TEST(round_trip)
{
    char path[512];
    t_path(path, sizeof path, "drive.rate");
    sl_io_rate r = sample(), back;
    sl_err err;
    CHECK(sl_io_rate_save(&r, path, &err) == SL_OK);
    bool found = false;
    CHECK(sl_io_rate_load(&back, &found, path, &err) == SL_OK);
    CHECK(found);
    CHECK_EQ_INT(back.n, 2);
    CHECK(!strcmp(back.device, "dev-254-0"));
    CHECK(back.when == 1796000000);
    CHECK(sl_io_rate_for(&back, 4) == 3142.5 * 1048576.0);
    CHECK(sl_io_rate_for(&back, 8) == 4094.25 * 1048576.0);
    CHECK(sl_io_rate_for(&back, 2) == 0.0);
    /* missing: not found, no error */
    t_path(path, sizeof path, "none.rate");
    CHECK(sl_io_rate_load(&back, &found, path, &err) == SL_OK);
    CHECK(!found);
}

/* the saved text with `from` replaced by `to` must be refused, the message
 * naming `what` */
static void damaged(const char *from, const char *to, const char *what)
{
    char path[512], text[4096], out[4096];
    t_path(path, sizeof path, "damaged.rate");
    sl_io_rate r = sample(), back;
    sl_err err;
    CHECK(sl_io_rate_save(&r, path, &err) == SL_OK);
    read_text(path, text, sizeof text);
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "'%s' not in the saved text", from);
    if (!at) return;
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    write_text(path, out);
    bool found = true;
    CHECK_EQ_INT(sl_io_rate_load(&back, &found, path, &err), SL_EFORMAT);
    CHECK(!found);
    CHECK_MSG(strstr(err.msg, what) != NULL, "'%s' lacks '%s'", err.msg, what);
    CHECK(sl_io_rate_for(&back, 4) == 0.0);
}

TEST(damaged_files_are_refused)
{
    damaged("3142.500", "3143.500", "checksum");
    damaged("sluice io rate v1", "sluice io rate v2", "line 1");
    damaged("lanes 8 mib_s", "lanes 8 mibs", "line 5");
    damaged("lanes 4 mib_s 3142.500", "lanes 4 mib_s -1", "line 4");
    damaged("\nend ", "\nxend ", "expected 'lanes <N> mib_s <rate>'");
    damaged("end ", "", "");
    char path[512], text[4096];
    t_path(path, sizeof path, "tail.rate");
    sl_io_rate r = sample(), back;
    sl_err err;
    CHECK(sl_io_rate_save(&r, path, &err) == SL_OK);
    read_text(path, text, sizeof text);
    strcat(text, "more\n");
    write_text(path, text);
    bool found;
    CHECK_EQ_INT(sl_io_rate_load(&back, &found, path, &err), SL_EFORMAT);
    CHECK(strstr(err.msg, "after the 'end' line") != NULL);
}

TEST(save_refuses_non_rates)
{
    char path[512];
    t_path(path, sizeof path, "bad.rate");
    sl_err err;
    sl_io_rate r = sample();
    r.mib_s[1] = 0.0;
    CHECK_EQ_INT(sl_io_rate_save(&r, path, &err), SL_EINVAL);
    r = sample();
    snprintf(r.device, sizeof r.device, "dev/../x");
    CHECK_EQ_INT(sl_io_rate_save(&r, path, &err), SL_EINVAL);
    r = sample();
    r.n = 0;
    CHECK_EQ_INT(sl_io_rate_save(&r, path, &err), SL_EINVAL);
}

TEST(device_key_names_the_device)
{
    char path[512], key[64];
    t_path(path, sizeof path, "dev.rate");
    write_text(path, "x");
    sl_err err;
    CHECK(sl_io_rate_device(path, key, sizeof key, &err) == SL_OK);
    CHECK(!strncmp(key, "dev-", 4));
    t_path(path, sizeof path, "no-such-file");
    CHECK_EQ_INT(sl_io_rate_device(path, key, sizeof key, &err), SL_EIO);
}

/* The best point of a curve that rises and falls again (the drive:
 * 5560, 5442, 6571, 7233, 6469 MiB/s at 1..16 lanes), and the fewest lanes
 * within a slack of it. */
TEST(best_point_of_the_curve)
{
    static const unsigned lanes[5] = {1, 2, 4, 8, 16};
    static const double rate[5] = {5560, 5442, 6571, 7233, 6469};
    sl_io_rate r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 5; i++) {
        r.lanes[i] = lanes[i];
        r.mib_s[i] = rate[i];
    }
    r.n = 5;
    unsigned best = 0;
    CHECK(sl_io_rate_best(&r, &best) == 7233 * 1048576.0);
    CHECK_EQ_INT(best, 8);
    CHECK_EQ_INT(sl_io_rate_enough_lanes(&r, 0.05), 8);   /* 6571 is 9 % below */
    CHECK_EQ_INT(sl_io_rate_enough_lanes(&r, 0.10), 4);
    CHECK_EQ_INT(sl_io_rate_enough_lanes(&r, 0.25), 1);
    r.n = 0;
    CHECK(sl_io_rate_best(&r, &best) == 0.0);
    CHECK_EQ_INT(best, 0);
    CHECK_EQ_INT(sl_io_rate_enough_lanes(&r, 0.05), 0);
}

int main(void)
{
    RUN(best_point_of_the_curve);
    RUN(round_trip);
    RUN(damaged_files_are_refused);
    RUN(save_refuses_non_rates);
    RUN(device_key_names_the_device);
    return TEST_REPORT();
}
