/* stats_csv.c - see stats_csv.h. */
#include "stats_csv.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/mem.h"
#include "util/out_file.h"
#include "util/timer.h"

static struct {
    bool open;
    sl_out_file out;     /* written live (out_file.h): rows up to a crash stay */
    int rc;              /* the first write's error, 0 if none */
    sl_err err;
    uint64_t t_ns;       /* the previous row's end */
    sl_stream_stats st;  /* counters at the previous row */
    uint64_t majflt;
} csv;

static void put(const char *line, size_t n)
{
    if (!csv.rc) csv.rc = sl_out_write(&csv.out, line, n, &csv.err);
}

static void snapshot(const sl_model *m)
{
    double cpu;
    sl_model_stream_stats(m, &csv.st);
    sl_proc_usage(&csv.majflt, &cpu);
    csv.t_ns = sl_now_ns();
}

bool stats_csv_open(const char *cmd, const char *path, const sl_model *m)
{
    sl_err err = {0};
    if (sl_out_open_live(&csv.out, path, &sl_out_text, &err)) {
        fprintf(stderr, "sluice %s: --stats-csv: %s\n", cmd, err.msg);
        return false;
    }
    csv.open = true;
    csv.rc = 0;
    static const char head[] = "token,phase,ms,compute_ms,manage_ms,stall_ms,hits,misses,"
                               "read_bytes,prefetch_used,prefetch_wasted,major_faults,rss_mib\n";
    put(head, sizeof head - 1);
    snapshot(m);
    return true;
}

void stats_csv_row(const sl_model *m, long token)
{
    if (!csv.open) return;
    const sl_stream_stats a = csv.st;
    const uint64_t t0 = csv.t_ns, f0 = csv.majflt;
    snapshot(m);
    const sl_stream_stats *b = &csv.st;
    uint64_t rss = 0, peak = 0;
    sl_mem_rss(&rss, &peak);
    const double ms = (double)(csv.t_ns - t0) / 1e6;
    const double manage = 1e3 * (b->manage_s - a.manage_s), stall = 1e3 * (b->stall_s - a.stall_s);
    char line[512];
    int n = snprintf(line, sizeof line, "%ld,%s,%.3f,%.3f,%.3f,%.3f,%llu,%llu,%llu,%llu,%llu,"
                     "%llu,%.1f\n", token, token == 0 ? "prompt" : "decode", ms,
                     ms - manage - stall, manage, stall,
                     (unsigned long long)(b->hits - a.hits),
                     (unsigned long long)(b->misses - a.misses),
                     (unsigned long long)(b->window_bytes - a.window_bytes),
                     (unsigned long long)(b->prefetch_used - a.prefetch_used),
                     (unsigned long long)(b->prefetch_wasted - a.prefetch_wasted),
                     (unsigned long long)(csv.majflt - f0), (double)rss / (1024.0 * 1024.0));
    if (n > 0 && (size_t)n < sizeof line) put(line, (size_t)n);
}

bool stats_csv_close(const char *cmd)
{
    if (!csv.open) return true;
    csv.open = false;
    if (csv.rc) sl_out_abort(&csv.out);
    else csv.rc = sl_out_commit(&csv.out, &csv.err);
    if (!csv.rc) return true;
    fprintf(stderr, "sluice %s: --stats-csv: %s\n", cmd, csv.err.msg);
    return false;
}
