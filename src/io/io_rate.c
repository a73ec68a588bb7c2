/* io_rate.c - see io_rate.h. */
#include "io/io_rate.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "util/file.h"
#include "util/out_file.h"

#define HEADER "sluice io rate v1"
#define FILE_LIMIT (64u << 10)

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static bool key_ok(const char *k)
{
    if (!k[0]) return false;
    for (const char *c = k; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_'))
            return false;
    return true;
}

int sl_io_rate_device(const char *path, char *key, size_t cap, sl_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return sl_err_set(err, SL_EIO, "cannot stat '%s': %s", path, strerror(errno));
    const int n = snprintf(key, cap, "dev-%u-%u", major(sb.st_dev), minor(sb.st_dev));
    if (n < 0 || (size_t)n >= cap) return sl_err_set(err, SL_EINVAL, "device key too long");
    return SL_OK;
}

int sl_io_rate_save(const sl_io_rate *r, const char *path, sl_err *err)
{
    if (!key_ok(r->device))
        return sl_err_set(err, SL_EINVAL, "io rate: device key '%.64s' must be letters, "
                          "digits, '-' or '_'", r->device);
    if (r->n < 1 || r->n > SL_IO_RATE_MAX_ROWS)
        return sl_err_set(err, SL_EINVAL, "io rate: %d rows (1..%d)", r->n, SL_IO_RATE_MAX_ROWS);
    char text[4096];
    size_t n = (size_t)snprintf(text, sizeof text, HEADER "\ndevice %s\nwhen %lld\n", r->device,
                                r->when);
    for (int i = 0; i < r->n; i++) {
        if (!(isfinite(r->mib_s[i]) && r->mib_s[i] > 0) || r->lanes[i] < 1)
            return sl_err_set(err, SL_EINVAL, "io rate: row %d (%u lanes, %g MiB/s) is not a "
                              "rate", i, r->lanes[i], r->mib_s[i]);
        n += (size_t)snprintf(text + n, sizeof text - n, "lanes %u mib_s %.3f\n", r->lanes[i],
                              r->mib_s[i]);
    }
    n += (size_t)snprintf(text + n, sizeof text - n, "end %016llx\n",
                          (unsigned long long)fnv1a(text, n));
    /* any version's file (or a damaged one) may be replaced, nothing else */
    static const sl_out_kind rate_kind = {"a drive rate file", "sluice io rate", 14};
    return sl_out_write_all(path, &rate_kind, text, n, err);
}

static int bad(const char *path, int line, const char *what, sl_err *err)
{
    return sl_err_set(err, SL_EFORMAT, "drive rate file '%s', line %d: %s", path, line, what);
}

int sl_io_rate_load(sl_io_rate *r, bool *found, const char *path, sl_err *err)
{
    memset(r, 0, sizeof *r);
    *found = false;
    sl_file_id id;
    int rc = sl_file_identity(path, &id, err);
    if (rc || !id.exists) return rc;
    char *text = NULL;
    size_t len = 0;
    if ((rc = sl_file_read_all(path, FILE_LIMIT, &text, &len, err))) return rc;
    int line = 0;
    size_t pos = 0;
    rc = SL_OK;
    char l[256];
    size_t body = 0;
    for (;;) {
        if (pos >= len) {
            rc = bad(path, line, "the file ends before its 'end' line", err);
            break;
        }
        size_t e = pos;
        while (e < len && text[e] != '\n') e++;
        if (e - pos >= sizeof l) {
            rc = bad(path, line + 1, "line too long", err);
            break;
        }
        memcpy(l, text + pos, e - pos);
        l[e - pos] = '\0';
        const size_t start = pos;
        pos = e < len ? e + 1 : e;
        line++;
        int used = 0;
        if (line == 1) {
            if (strcmp(l, HEADER) != 0) {
                rc = bad(path, line, "expected the header '" HEADER "'", err);
                break;
            }
        } else if (line == 2) {
            if (strncmp(l, "device ", 7) != 0 || !key_ok(l + 7) ||
                strlen(l + 7) >= sizeof r->device) {
                rc = bad(path, line, "expected 'device <key>'", err);
                break;
            }
            memcpy(r->device, l + 7, strlen(l + 7) + 1); /* fits: checked above */
        } else if (line == 3) {
            if (sscanf(l, "when %lld%n", &r->when, &used) != 1 || l[used] != '\0') {
                rc = bad(path, line, "expected 'when <seconds>'", err);
                break;
            }
        } else if (!strncmp(l, "end ", 4)) {
            unsigned long long sum = 0;
            if (sscanf(l, "end %16llx%n", &sum, &used) != 1 || used != 20 || l[used] != '\0') {
                rc = bad(path, line, "expected 'end <checksum>'", err);
                break;
            }
            body = start;
            if (pos != len) rc = bad(path, line, "text after the 'end' line", err);
            else if ((uint64_t)sum != fnv1a(text, body))
                rc = bad(path, line, "the checksum does not match the text (a damaged file)",
                         err);
            else if (r->n == 0)
                rc = bad(path, line, "no 'lanes N mib_s R' line", err);
            break;
        } else {
            unsigned lanes = 0;
            double v = 0;
            if (sscanf(l, "lanes %u mib_s %lf%n", &lanes, &v, &used) != 2 || l[used] != '\0' ||
                lanes < 1 || !(isfinite(v) && v > 0)) {
                rc = bad(path, line, "expected 'lanes <N> mib_s <rate>'", err);
                break;
            }
            if (r->n == SL_IO_RATE_MAX_ROWS) {
                rc = bad(path, line, "too many rows", err);
                break;
            }
            r->lanes[r->n] = lanes;
            r->mib_s[r->n++] = v;
        }
    }
    free(text);
    if (rc) {
        memset(r, 0, sizeof *r);
        return rc;
    }
    *found = true;
    return SL_OK;
}

double sl_io_rate_for(const sl_io_rate *r, unsigned lanes)
{
    for (int i = 0; i < r->n; i++)
        if (r->lanes[i] == lanes) return r->mib_s[i] * 1048576.0;
    return 0.0;
}

double sl_io_rate_best(const sl_io_rate *r, unsigned *lanes)
{
    double best = 0.0;
    *lanes = 0;
    for (int i = 0; i < r->n; i++)
        if (r->mib_s[i] > best) {
            best = r->mib_s[i];
            *lanes = r->lanes[i];
        }
    return best * 1048576.0;
}

unsigned sl_io_rate_enough_lanes(const sl_io_rate *r, double slack)
{
    unsigned lanes = 0;
    const double best = sl_io_rate_best(r, &lanes) / 1048576.0;
    for (int i = 0; i < r->n; i++)
        if (r->mib_s[i] >= best * (1.0 - slack) && r->lanes[i] < lanes) lanes = r->lanes[i];
    return lanes;
}
