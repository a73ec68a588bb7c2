/* gguf_open.c - the reader's front door: opening a file, a split set of
 * files or a memory image, reading tensor bytes, and closing.
 *
 * Owns: which files make up a model (the *-00001-of-0000N.gguf naming and the
 * split.* keys that confirm it), the per-file descriptors, and range checks
 * on tensor reads. Must not know: the header layout (gguf.c) or models. */
#include "gguf/gguf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"

typedef unsigned long long ull;

#define SPLIT_SUFFIX_LEN 20 /* "-00001-of-00003.gguf" */

static bool five_digits(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 5; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* Recognises "...-KKKKK-of-NNNNN.gguf"; returns the position of the suffix
 * or -1 if the path does not follow the split naming. */
static long split_suffix(const char *path, unsigned *k, unsigned *n)
{
    size_t len = strlen(path);
    if (len < SPLIT_SUFFIX_LEN) return -1;
    const char *s = path + len - SPLIT_SUFFIX_LEN;
    if (s[0] != '-' || memcmp(s + 6, "-of-", 4) != 0 || strcmp(s + 15, ".gguf") != 0)
        return -1;
    if (!five_digits(s + 1, k) || !five_digits(s + 10, n)) return -1;
    return (long)(len - SPLIT_SUFFIX_LEN);
}

void sl_gguf_close(sl_gguf *g)
{
    if (!g) return;
    for (uint32_t i = 0; i < g->n_parts; i++) {
        sl_file_close(&g->parts[i].file);
        free(g->parts[i].path);
    }
    free(g->parts);
    sl_gguf_arena_free(&g->arena);
    free(g);
}

static sl_gguf *alloc_handle(uint32_t n_parts)
{
    sl_gguf *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->parts = calloc(n_parts, sizeof *g->parts);
    if (!g->parts) {
        free(g);
        return NULL;
    }
    for (uint32_t i = 0; i < n_parts; i++) g->parts[i].file.fd = -1;
    return g;
}

static void adopt_image(sl_gguf *g, const sl_gguf_image *img)
{
    g->version = img->version;
    g->alignment = img->alignment;
    g->n_kv = img->n_kv;
    g->kvs = img->kvs;
    g->kv_index = img->kv_index;
    g->n_tensors = img->n_tensors;
    g->tensors = img->tensors;
    g->tensor_index = img->tensor_index;
}

int sl_gguf_open_memory(sl_gguf **out, const void *buf, size_t len, sl_err *err)
{
    *out = NULL;
    if (!buf && len) return sl_err_set(err, SL_EINVAL, "sl_gguf_open_memory: NULL buffer");
    sl_gguf *g = alloc_handle(1);
    if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory opening a GGUF image");
    g->n_parts = 1;
    g->mem = buf;
    g->parts[0].path = strdup("(memory)");
    g->parts[0].size = len;
    if (!g->parts[0].path) {
        sl_gguf_close(g);
        return sl_err_set(err, SL_ENOMEM, "out of memory opening a GGUF image");
    }
    static const uint8_t empty[1];
    sl_gguf_src src = {.mem = buf ? buf : empty, .size = len, .name = g->parts[0].path};
    sl_gguf_image img;
    int rc = sl_gguf_parse_image(&g->arena, &src, 0, &img, err);
    if (rc) {
        sl_gguf_close(g);
        return rc;
    }
    adopt_image(g, &img);
    g->parts[0].data_offset = img.data_offset;
    *out = g;
    return SL_OK;
}

/* Reads an unsigned integer key of any width; false if absent or not one. */
static bool image_get_uint(const sl_gguf_image *img, const char *key, uint64_t *v,
                           bool *present)
{
    const sl_gguf_kv *kv = sl_gguf_index_find_kv(img->kv_index, img->n_kv, key);
    *present = kv != NULL;
    if (!kv) return false;
    switch (kv->value.type) {
    case SL_GGUF_UINT8: case SL_GGUF_UINT16: case SL_GGUF_UINT32: case SL_GGUF_UINT64:
        *v = kv->value.v.u64;
        return true;
    case SL_GGUF_INT8: case SL_GGUF_INT16: case SL_GGUF_INT32: case SL_GGUF_INT64:
        if (kv->value.v.i64 < 0) return false;
        *v = (uint64_t)kv->value.v.i64;
        return true;
    default: return false;
    }
}

/* Checks split.no / split.count of part k (0-based) of n where present. */
static int check_split_keys(const sl_gguf_image *img, const char *path, unsigned k, unsigned n,
                            sl_err *err)
{
    uint64_t v;
    bool present;
    if (image_get_uint(img, "split.count", &v, &present)) {
        if (v != n)
            return sl_err_set(err, SL_EFORMAT,
                              "%s: split.count = %llu, but the file name says %u parts", path,
                              (ull)v, n);
    } else if (present) {
        return sl_err_set(err, SL_EFORMAT, "%s: split.count is not a non-negative integer",
                          path);
    }
    if (image_get_uint(img, "split.no", &v, &present)) {
        if (v != k)
            return sl_err_set(err, SL_EFORMAT,
                              "%s: split.no = %llu, but the file name says part %u of %u "
                              "(split.no %u)",
                              path, (ull)v, k + 1, n, k);
    } else if (present) {
        return sl_err_set(err, SL_EFORMAT, "%s: split.no is not a non-negative integer", path);
    }
    return SL_OK;
}

static int open_part(sl_gguf *g, uint32_t i, const char *path, sl_gguf_image *img,
                     sl_err *err)
{
    sl_gguf_part *p = &g->parts[i];
    int rc = sl_file_open_read(&p->file, path, err);
    if (rc) return rc;
    p->path = strdup(path);
    if (!p->path) return sl_err_set(err, SL_ENOMEM, "out of memory opening '%s'", path);
    p->size = p->file.size;
    sl_gguf_src src = {.file = &p->file, .size = p->size, .name = p->path};
    rc = sl_gguf_parse_image(&g->arena, &src, i, img, err);
    if (rc) return rc;
    p->data_offset = img->data_offset;
    return SL_OK;
}

int sl_gguf_open(sl_gguf **out, const char *path, sl_err *err)
{
    *out = NULL;
    if (!path) return sl_err_set(err, SL_EINVAL, "sl_gguf_open: NULL path");
    unsigned k = 0, n = 1;
    long sfx = split_suffix(path, &k, &n);
    if (sfx >= 0 && (k == 0 || n == 0 || k > n))
        sfx = -1; /* not a split name after all; read as a plain file */
    if (sfx >= 0 && k != 1)
        return sl_err_set(err, SL_EINVAL,
                          "%s: this is part %u of a %u-part split model; open the first part "
                          "(...-00001-of-%05u.gguf) to read the whole model",
                          path, k, n, n);
    if (sfx < 0) n = 1;

    sl_gguf *g = alloc_handle(n);
    if (!g) return sl_err_set(err, SL_ENOMEM, "out of memory opening '%s'", path);
    g->n_parts = n;
    sl_gguf_image *imgs = calloc(n, sizeof *imgs);
    char *part_path = malloc(strlen(path) + 1);
    int rc = SL_OK;
    if (!imgs || !part_path) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory opening '%s'", path);
        goto err;
    }
    for (unsigned i = 0; i < n; i++) {
        strcpy(part_path, path);
        if (n > 1) {
            unsigned v = i + 1; /* <= n <= 99999: five digits */
            for (int d = 4; d >= 0; d--, v /= 10) part_path[sfx + 1 + d] = (char)('0' + v % 10);
        }
        if ((rc = open_part(g, i, part_path, &imgs[i], err))) goto err;
        if (sfx >= 0 && (rc = check_split_keys(&imgs[i], part_path, i, n, err))) goto err;
    }
    if (sfx < 0) {
        /* A part of a split set under another name would silently lose the
         * tensors of the other parts: refuse it. */
        uint64_t cnt;
        bool present;
        if (image_get_uint(&imgs[0], "split.count", &cnt, &present) && cnt > 1) {
            rc = sl_err_set(err, SL_EFORMAT,
                            "%s: split.count = %llu says this is one part of a split model, "
                            "but its name does not end in -00001-of-%05llu.gguf",
                            path, (ull)cnt, (ull)cnt);
            goto err;
        }
    }

    adopt_image(g, &imgs[0]);
    if (n > 1) {
        uint64_t total = 0;
        for (unsigned i = 0; i < n; i++)
            if (!sl_add_u64(total, imgs[i].n_tensors, &total)) total = UINT64_MAX;
        uint64_t bytes;
        if (!sl_mul_u64(total, sizeof(sl_gguf_tensor), &bytes) ||
            !(g->tensors = sl_gguf_arena_alloc(&g->arena, bytes))) {
            rc = sl_err_set(err, SL_ENOMEM, "out of memory joining the parts of '%s'", path);
            goto err;
        }
        uint64_t at = 0;
        for (unsigned i = 0; i < n; i++) {
            if (imgs[i].n_tensors)
                memcpy(g->tensors + at, imgs[i].tensors,
                       (size_t)imgs[i].n_tensors * sizeof(sl_gguf_tensor));
            at += imgs[i].n_tensors;
        }
        g->n_tensors = total;
        uint64_t declared;
        bool present;
        if (image_get_uint(&imgs[0], "split.tensors.count", &declared, &present) &&
            declared != total) {
            rc = sl_err_set(err, SL_EFORMAT,
                            "%s: split.tensors.count = %llu, but the %u parts hold %llu tensors",
                            path, (ull)declared, n, (ull)total);
            goto err;
        }
        if ((rc = sl_gguf_index_tensors(&g->arena, g->tensors, total, NULL, &g->tensor_index,
                                        path, err)))
            goto err;
    }
    free(imgs);
    free(part_path);
    *out = g;
    return SL_OK;
err:
    free(imgs);
    free(part_path);
    sl_gguf_close(g);
    return rc;
}

int sl_gguf_read_tensor(const sl_gguf *g, const sl_gguf_tensor *t, uint64_t from, void *dst,
                        uint64_t len, sl_err *err)
{
    if (!g || !t || t < g->tensors || t >= g->tensors + g->n_tensors)
        return sl_err_set(err, SL_EINVAL, "sl_gguf_read_tensor: tensor does not belong to this "
                                          "file");
    uint64_t end;
    if (!sl_add_u64(from, len, &end) || end > t->nbytes) {
        char show[128];
        return sl_err_set(err, SL_EINVAL,
                          "tensor '%s': read of %llu bytes at %llu is outside its %llu bytes",
                          sl_gguf_str_show(show, sizeof show, &t->name), (ull)len, (ull)from,
                          (ull)t->nbytes);
    }
    if (len == 0) return SL_OK;
    if (len > SIZE_MAX) return sl_err_set(err, SL_EINVAL, "read too large");
    if (g->mem) {
        memcpy(dst, g->mem + t->offset + from, (size_t)len);
        return SL_OK;
    }
    return sl_file_pread_full(&g->parts[t->file_index].file, dst, (size_t)len,
                              t->offset + from, err);
}
