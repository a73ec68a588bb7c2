/* out_file.c - see out_file.h. Platform calls stay in file.c. */
#include "util/out_file.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const sl_out_kind sl_out_text = {"a text output", NULL, 0};

#define TEXT_HEAD 4096 /* bytes of an existing file a text output looks at */
#define GGUF_MAGIC "GGUF"

/* What an existing file that is refused looks like, for the message. */
static const char *looks_like(const uint8_t *head, size_t n)
{
    if (n >= 4 && !memcmp(head, GGUF_MAGIC, 4)) return "a GGUF model";
    if (n >= 8 && !memcmp(head, "SLSTATE1", 8)) return "a sluice session file";
    if (memchr(head, 0, n)) return "a binary file";
    return "a text file";
}

int sl_out_check(const char *path, const sl_out_kind *k, sl_err *err)
{
    sl_file_id id;
    int rc = sl_file_identity(path, &id, err);
    if (rc || !id.exists) return rc;
    char input[512];
    if (sl_file_open_input(&id, input, sizeof input)) {
        if (!strcmp(input, path))
            return sl_err_set(err, SL_EINVAL, "'%s' is an input sluice has open (the model or "
                              "another file it reads): it is left as it is", path);
        return sl_err_set(err, SL_EINVAL, "'%s' is the same file as '%s', an input sluice has "
                          "open: it is left as it is", path, input);
    }
    if (!id.regular) {
        if (!k->magic && id.stream) return SL_OK; /* written in place, replacing nothing */
        return sl_err_set(err, SL_EINVAL, "'%s' is a %s, not a regular file (%s is written to "
                          "a regular file): it is left as it is", path, id.kind, k->what);
    }
    uint8_t head[TEXT_HEAD];
    size_t got = 0;
    const size_t want = k->magic ? (k->magic_len < 8 ? 8 : k->magic_len) : sizeof head;
    if ((rc = sl_file_read_head(path, head, want < sizeof head ? want : sizeof head, &got, err)))
        return rc;
    if (got == 0) return SL_OK; /* an empty file: nothing to lose */
    if (k->magic) {
        if (got >= k->magic_len && !memcmp(head, k->magic, k->magic_len)) return SL_OK;
        return sl_err_set(err, SL_EINVAL, "'%s' is %s, not %s (%s replaces only another): it "
                          "is left as it is", path, looks_like(head, got), k->what, k->what);
    }
    if (!memchr(head, 0, got)) return SL_OK;
    return sl_err_set(err, SL_EINVAL, "'%s' is %s, not text (a text output replaces only a "
                      "text file): it is left as it is", path, looks_like(head, got));
}

static void out_free(sl_out_file *o)
{
    free(o->tmp);
    free(o->dest);
    free(o->path);
    o->tmp = o->dest = o->path = NULL;
    o->open = false;
}

/* sl_out_open and sl_out_open_live: live writes path itself. */
static int out_open(sl_out_file *o, const char *path, const sl_out_kind *k, bool live,
                    sl_err *err)
{
    memset(o, 0, sizeof *o);
    o->f.fd = -1;
    int rc = sl_out_check(path, k, err);
    if (rc) return rc;
    o->path = malloc(strlen(path) + 1);
    if (!o->path) return sl_err_set(err, SL_ENOMEM, "out of memory");
    strcpy(o->path, path);
    sl_file_id id;
    if ((rc = sl_file_identity(path, &id, err))) goto fail;
    if (live || (id.exists && id.stream)) { /* a pipe or device, or a live log: in place */
        rc = sl_file_open_write(&o->f, path, err);
    } else {
        rc = sl_file_temp_beside(path, &o->tmp, &o->dest, err);
        if (!rc) rc = sl_file_open_write(&o->f, o->tmp, err);
    }
    if (rc) goto fail;
    /* messages name the output, not its temporary file */
    char *shown = malloc(strlen(path) + 1);
    if (!shown) {
        sl_file_close(&o->f);
        rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        goto fail;
    }
    strcpy(shown, path);
    free(o->f.path);
    o->f.path = shown;
    o->open = true;
    return SL_OK;
fail:
    if (o->tmp) sl_file_remove(o->tmp);
    out_free(o);
    return rc;
}

int sl_out_open(sl_out_file *o, const char *path, const sl_out_kind *k, sl_err *err)
{
    return out_open(o, path, k, false, err);
}

int sl_out_open_live(sl_out_file *o, const char *path, const sl_out_kind *k, sl_err *err)
{
    return out_open(o, path, k, true, err);
}

int sl_out_write(sl_out_file *o, const void *p, size_t len, sl_err *err)
{
    if (!o->open)
        return sl_err_set(err, SL_EINVAL, "sl_out_write: the output is not open for writes");
    if (len == 0) return SL_OK;
    return sl_file_write_full(&o->f, p, len, err);
}

/* Closes o's file, reporting the first failure to err. */
static int close_out(sl_out_file *o, bool sync, sl_err *err)
{
    int rc = SL_OK;
    if (o->f.fd < 0) return SL_OK;
    if (sync) rc = sl_file_sync(&o->f, err);
    const int crc = sl_file_close_checked(&o->f, rc ? NULL : err);
    return rc ? rc : crc;
}

int sl_out_commit(sl_out_file *o, sl_err *err)
{
    if (!o->open) return sl_err_set(err, SL_EINVAL, "sl_out_commit: the output is not open");
    int rc = close_out(o, true, err);
    if (!rc && o->tmp) {
        rc = sl_file_rename(o->tmp, o->dest, err);
        if (!rc) sl_file_sync_dir(o->dest);
    }
    if (rc && o->tmp) sl_file_remove(o->tmp);
    out_free(o);
    return rc;
}

void sl_out_abort(sl_out_file *o)
{
    if (!o || !o->open) return;
    close_out(o, false, NULL);
    if (o->tmp) sl_file_remove(o->tmp);
    out_free(o);
}

int sl_out_write_all(const char *path, const sl_out_kind *k, const void *data, size_t len,
                     sl_err *err)
{
    sl_out_file o;
    int rc = sl_out_open(&o, path, k, err);
    if (rc) return rc;
    if ((rc = sl_out_write(&o, data, len, err))) {
        sl_out_abort(&o);
        return rc;
    }
    return sl_out_commit(&o, err);
}

FILE *sl_out_fopen_live(const char *path, const sl_out_kind *k, sl_err *err)
{
    return sl_out_check(path, k, err) ? NULL : sl_file_fopen_write(path, err);
}
