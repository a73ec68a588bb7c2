/* outputs.c - see outputs.h. */
#include "outputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/file.h"
#include "util/out_file.h"

static bool identity(const char *cmd, const char *path, sl_file_id *id)
{
    sl_err err = {0};
    if (!strcmp(path, "-")) {
        sl_file_fd_identity(0, id);
        return true;
    }
    if (sl_file_identity(path, id, &err)) {
        fprintf(stderr, "sluice %s: %s\n", cmd, err.msg);
        return false;
    }
    return true;
}

static const char *shown(const char *path)
{
    return strcmp(path, "-") ? path : "standard input";
}

bool outputs_check(const char *cmd, const file_role *in, size_t n_in, const file_role *out,
                   size_t n_out)
{
    sl_file_id ids_in[16], ids_out[16];
    if (n_in > 16 || n_out > 16) return false;
    for (size_t i = 0; i < n_in; i++)
        if (in[i].path && !identity(cmd, in[i].path, &ids_in[i])) return false;
    for (size_t o = 0; o < n_out; o++) {
        if (!out[o].path) continue;
        if (!identity(cmd, out[o].path, &ids_out[o])) return false;
        for (size_t i = 0; i < n_in; i++) {
            if (!in[i].path || !sl_file_id_same(&ids_out[o], &ids_in[i])) continue;
            fprintf(stderr, "sluice %s: the output %s '%s' is the same file as %s '%s'; "
                    "writing it would destroy that input: give another path\n", cmd,
                    out[o].what, out[o].path, in[i].what, shown(in[i].path));
            return false;
        }
        /* two outputs into one file would interleave; devices such as
         * /dev/null may be shared */
        for (size_t p = 0; p < o; p++) {
            if (!out[p].path) continue;
            const bool same = ids_out[o].exists
                                  ? ids_out[o].regular && sl_file_id_same(&ids_out[o], &ids_out[p])
                                  : !ids_out[p].exists && !strcmp(out[o].path, out[p].path);
            if (!same) continue;
            fprintf(stderr, "sluice %s: %s '%s' and %s '%s' are the same file; give each "
                    "output its own path\n", cmd, out[p].what, out[p].path, out[o].what,
                    out[o].path);
            return false;
        }
    }
    sl_file_id so;
    sl_file_fd_identity(1, &so);
    for (size_t i = 0; i < n_in; i++) {
        if (!in[i].path || !strcmp(in[i].path, "-") || !sl_file_id_same(&so, &ids_in[i]))
            continue;
        fprintf(stderr, "sluice %s: standard output is the same file as %s '%s'; writing it "
                "would destroy that input: redirect the output elsewhere\n", cmd, in[i].what,
                in[i].path);
        return false;
    }
    return true;
}

bool outputs_write_file(const char *cmd, const char *what, const char *path, const char *data,
                        size_t len)
{
    sl_err err = {0};
    if (sl_out_write_all(path, &sl_out_text, data, len, &err)) {
        fprintf(stderr, "sluice %s: %s: %s\n", cmd, what, err.msg);
        return false;
    }
    return true;
}

char *outputs_read_text(const char *cmd, const char *path, size_t *len)
{
    char *buf;
    sl_err err = {0};
    if (sl_file_read_all(path, APP_TEXT_LIMIT, &buf, len, &err)) {
        fprintf(stderr, "sluice %s: %s%s\n", cmd, err.msg,
                err.code == SL_EINVAL && strstr(err.msg, "limit") ? " (1 GiB)" : "");
        return NULL;
    }
    return buf;
}

bool outputs_stdout_failed(void)
{
    return fflush(stdout) != 0 || ferror(stdout);
}

bool outputs_finish_stdout(const char *cmd, bool report)
{
    errno = 0;
    const bool flushed = fflush(stdout) == 0;
    int e = errno;
    const bool had_error = ferror(stdout) != 0;
    errno = 0;
    const bool closed = fclose(stdout) == 0;
    if (!e) e = errno;
    if (flushed && !had_error && closed) return true;
    if (report)
        fprintf(stderr, "sluice %s: cannot write standard output: %s\n", cmd,
            e ? strerror(e) : "an earlier write failed");
    return false;
}
