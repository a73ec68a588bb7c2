/* cmd_inspect.c - `sluice inspect`: what is in a GGUF file and what it will
 * cost to stream.
 *
 * Owns: presenting a file's header, metadata (architecture hyperparameters,
 * a tokenizer summary, short forms of big arrays), its tensor table, and the
 * expert sizing a user needs to judge a streaming setup (dense vs routed
 * bytes, bytes per expert per layer and per projection, one token's expert
 * cycle), as text or as one JSON object. Must not touch tensor data: only
 * the reader's metadata and tensor infos.
 *
 * Every string that comes from the file (keys, string values, tensor names,
 * architecture, tokenizer names) is shown escaped: in text by the rule of
 * util/escape.h (control bytes, C1 controls and invalid UTF-8 as "\xNN";
 * inside quoted values '"' and '\' are backslash-escaped too, and LF/TAB
 * read "\n"/"\t"), in JSON by json_emit's string escaping (control bytes
 * as \u00XX, invalid UTF-8 as U+FFFD), so nothing from a file reaches the
 * terminal raw and --json stays valid JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "gguf/gguf.h"
#include "json_emit.h"
#include "model/arch.h"
#include "util/escape.h"

#define HEAD_ELEMS 5      /* array elements shown in text */
#define JSON_HEAD_ELEMS 8 /* array elements shown in JSON */
#define MAX_LAYER (1u << 20)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice inspect [options] MODEL.gguf\n"
            "\n"
            "Shows a GGUF file's header, metadata, tokenizer summary, tensor table and the\n"
            "expert sizing that decides streaming cost: dense bytes, routed-expert bytes,\n"
            "bytes per expert per layer (and per projection) and one token's expert cycle\n"
            "(layers x experts used x bytes per expert). A split model is read whole when\n"
            "given its first part (...-00001-of-0000N.gguf).\n"
            "\n"
            "options:\n"
            "  -h, --help        show this help and exit\n"
            "  -m, --model FILE  the model (llama.cpp's spelling; the bare path works too)\n"
            "      --json        print one JSON object instead of text\n"
            "      --tensors     list every tensor (default)\n"
            "      --no-tensors  leave the tensor table out\n");
}

/* ---- helpers -------------------------------------------------------------- */

static const char *human(char *b, size_t cap, uint64_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0) snprintf(b, cap, "%" PRIu64 " B", n);
    else snprintf(b, cap, "%.2f %s", v, units[u]);
    return b;
}

/* Shortest decimal that reads back as the same float/double. */
static const char *num_f(char *b, size_t cap, double v, bool single)
{
    for (int p = 6; p <= 17; p++) {
        snprintf(b, cap, "%.*g", p, v);
        if (single ? strtof(b, NULL) == (float)v : strtod(b, NULL) == v) break;
    }
    return b;
}

/* Prints a file's string s[0..len) quoted, shortened to about max bytes
 * (never inside a UTF-8 sequence): '"' and '\' backslash-escaped, LF and
 * TAB as \n and \t, everything else by util/escape.h's rule. */
static void put_str(FILE *f, const char *s, uint64_t len, uint64_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    uint64_t i = 0;
    while (i < len && i < max) {
        unsigned char c = p[i];
        const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                          : c == '\t' ? "\\t" : NULL;
        if (named) {
            fputs(named, f);
            i++;
            continue;
        }
        size_t k = sl_utf8_seq_len(p + i, (size_t)(len - i));
        if (k == 0) k = 1; /* one invalid byte: escaped below */
        char b[20];
        sl_escape(b, sizeof b, s + i, k, NULL);
        fputs(b, f);
        i += k;
    }
    fputc('"', f);
    if (len > i) fprintf(f, "... (%" PRIu64 " bytes)", len);
}

/* A file's string (a key, tensor name, architecture, ...) made printable by
 * util/escape.h's rule into b, with "..." if it had to be cut. */
static const char *shown(char *b, size_t cap, const char *s, size_t len)
{
    size_t used;
    if (!s) s = "", len = 0;
    sl_escape(b, cap - 3, s, len, &used);
    if (used < len) strcat(b, "...");
    return b;
}

#define SHOWN_MAX 256 /* bytes of an escaped name shown in text */

static bool is_unsigned(sl_gguf_vtype t)
{
    return t == SL_GGUF_UINT8 || t == SL_GGUF_UINT16 || t == SL_GGUF_UINT32 ||
           t == SL_GGUF_UINT64;
}

static void text_array(FILE *f, const sl_gguf_array *a, int depth);

static void text_value(FILE *f, const sl_gguf_value *v)
{
    char b[64];
    switch (v->type) {
    case SL_GGUF_FLOAT32: fputs(num_f(b, sizeof b, v->v.f64, true), f); break;
    case SL_GGUF_FLOAT64: fputs(num_f(b, sizeof b, v->v.f64, false), f); break;
    case SL_GGUF_BOOL: fputs(v->v.b ? "true" : "false", f); break;
    case SL_GGUF_STRING: put_str(f, v->v.str.ptr, v->v.str.len, 72); break;
    case SL_GGUF_ARRAY: text_array(f, &v->v.arr, 0); break;
    default:
        if (is_unsigned(v->type)) fprintf(f, "%" PRIu64, v->v.u64);
        else fprintf(f, "%" PRId64, v->v.i64);
    }
}

static void text_array(FILE *f, const sl_gguf_array *a, int depth)
{
    fprintf(f, "[%s x %" PRIu64 "]", sl_gguf_vtype_name(a->type), a->n);
    if (depth > 2) return;
    char b[64];
    for (uint64_t i = 0; i < a->n && i < HEAD_ELEMS; i++) {
        fputs(i ? ", " : " ", f);
        if (a->type == SL_GGUF_STRING) {
            const sl_gguf_str *s = sl_gguf_arr_str(a, i);
            put_str(f, s->ptr, s->len, 24);
        } else if (a->type == SL_GGUF_ARRAY) {
            fputc('(', f);
            text_array(f, &((const sl_gguf_value *)a->data)[i].v.arr, depth + 1);
            fputc(')', f);
        } else if (a->type == SL_GGUF_FLOAT32 || a->type == SL_GGUF_FLOAT64) {
            double d;
            sl_gguf_arr_f64(a, i, &d);
            fputs(num_f(b, sizeof b, d, a->type == SL_GGUF_FLOAT32), f);
        } else if (a->type == SL_GGUF_BOOL) {
            int64_t x;
            sl_gguf_arr_i64(a, i, &x);
            fputs(x ? "true" : "false", f);
        } else if (a->type == SL_GGUF_UINT64) {
            uint64_t x;
            memcpy(&x, (const uint8_t *)a->data + 8 * i, 8);
            fprintf(f, "%" PRIu64, x);
        } else {
            int64_t x;
            sl_gguf_arr_i64(a, i, &x);
            fprintf(f, "%" PRId64, x);
        }
    }
    if (a->n > HEAD_ELEMS && depth <= 2) fputs(", ...", f);
}

static void jw_gguf_array(jw_out *j, const sl_gguf_array *a);

static void jw_gguf_value(jw_out *j, const sl_gguf_value *v)
{
    switch (v->type) {
    case SL_GGUF_FLOAT32: jw_f32(j, (float)v->v.f64); break;
    case SL_GGUF_FLOAT64: jw_f64(j, v->v.f64); break;
    case SL_GGUF_BOOL: jw_bool(j, v->v.b); break;
    case SL_GGUF_STRING: jw_strn(j, v->v.str.ptr, (size_t)v->v.str.len); break;
    case SL_GGUF_ARRAY: jw_gguf_array(j, &v->v.arr); break;
    default:
        if (is_unsigned(v->type)) jw_u64(j, v->v.u64);
        else jw_i64(j, v->v.i64);
    }
}

/* Arrays are summarised, never dumped: type, length and the first few. */
static void jw_gguf_array(jw_out *j, const sl_gguf_array *a)
{
    jw_obj_begin_inline(j);
    jw_key(j, "type");
    jw_str(j, "array");
    jw_key(j, "element_type");
    jw_str(j, sl_gguf_vtype_name(a->type));
    jw_key(j, "length");
    jw_u64(j, a->n);
    jw_key(j, "head");
    jw_arr_begin_inline(j);
    for (uint64_t i = 0; i < a->n && i < JSON_HEAD_ELEMS; i++) {
        if (a->type == SL_GGUF_STRING) {
            const sl_gguf_str *s = sl_gguf_arr_str(a, i);
            jw_strn(j, s->ptr, (size_t)s->len);
        } else if (a->type == SL_GGUF_ARRAY) {
            if (j->depth + 4 < JW_MAX_DEPTH) jw_gguf_array(j, &((const sl_gguf_value *)a->data)[i].v.arr);
            else jw_null(j);
        } else if (a->type == SL_GGUF_FLOAT32 || a->type == SL_GGUF_FLOAT64) {
            double d;
            sl_gguf_arr_f64(a, i, &d);
            if (a->type == SL_GGUF_FLOAT32) jw_f32(j, (float)d);
            else jw_f64(j, d);
        } else if (a->type == SL_GGUF_BOOL) {
            int64_t x;
            sl_gguf_arr_i64(a, i, &x);
            jw_bool(j, x != 0);
        } else if (a->type == SL_GGUF_UINT64) {
            uint64_t x;
            memcpy(&x, (const uint8_t *)a->data + 8 * i, 8);
            jw_u64(j, x);
        } else {
            int64_t x;
            sl_gguf_arr_i64(a, i, &x);
            jw_i64(j, x);
        }
    }
    jw_arr_end(j);
    jw_obj_end(j);
}

/* ---- sizing ---------------------------------------------------------------- */

enum { P_GATE, P_UP, P_DOWN, P_COUNT };
static const char *const proj_names[P_COUNT] = {"gate", "up", "down"};

typedef struct layer_sz {
    bool has;            /* holds routed-expert tensors */
    uint64_t experts;    /* experts in this layer (see experts_in) */
    bool mismatch;       /* its _exps tensors disagree with each other or with
                            <arch>.expert_count */
    uint64_t proj[P_COUNT]; /* one expert's slice of ffn_{gate,up,down}_exps (a
                               fused ffn_gate_up_exps: its halves) */
    uint64_t other;      /* one expert's slice of any other _exps tensor */
    uint64_t per_expert; /* sum of the above */
    uint64_t bytes;      /* all routed bytes of the layer */
} layer_sz;

typedef struct sizing {
    uint64_t total, dense, routed;
    uint32_t n_layers; /* 1 + highest layer number seen in a routed tensor */
    layer_sz *layers;
    uint32_t n_expert_layers;
    bool have_count, have_used;
    uint32_t expert_count, expert_used;
    bool have_cycle;
    uint64_t cycle; /* sum over expert layers of used x per_expert */
} sizing;

/* The fused gate/up experts {n_embd, 2 * n_ff, experts} (gemma4; bound by
 * src/model/bind_gate_up.c): counted half as gate, half as up. */
#define FFN_GATE_UP_EXPS "ffn_gate_up_exps.weight"

static bool is_routed(const sl_gguf_tensor *t)
{
    return memmem(t->name.ptr, (size_t)t->name.len, "_exps", 5) != NULL;
}

/* "blk.N.suffix" -> N and suffix; false for global tensors. */
static bool layer_of(const sl_gguf_tensor *t, uint32_t *layer, const char **suffix)
{
    const char *s = t->name.ptr;
    if (strncmp(s, "blk.", 4) != 0) return false;
    s += 4;
    uint64_t n = 0;
    const char *d = s;
    while (*s >= '0' && *s <= '9' && n < MAX_LAYER) n = n * 10 + (uint64_t)(*s++ - '0');
    if (s == d || *s != '.' || n >= MAX_LAYER) return false;
    *layer = (uint32_t)n;
    *suffix = s + 1;
    return true;
}

static bool name_ends(const sl_gguf_tensor *t, const char *sfx)
{
    size_t n = strlen(sfx);
    return t->name.len >= n && !memcmp(t->name.ptr + t->name.len - n, sfx, n);
}

/* Experts held by a routed tensor. The experts are its outermost dimension,
 * except that a file with one expert may drop that trailing dimension of 1
 * (gguf-py and llama.cpp write the experts [n_embd, n_ff], not
 * [n_embd, n_ff, 1]): with <arch>.expert_count known, a tensor whose last
 * dimension is not the count holds one expert if the count is 1, and is a
 * mismatch otherwise; without it (or with a count of 0), a 2-D weight or a
 * 1-D bias is one expert. */
static uint64_t experts_in(const sl_gguf_tensor *t, const sizing *z, bool *mismatch)
{
    const uint64_t last = t->ne[t->n_dims - 1];
    *mismatch = false;
    if (z->have_count && z->expert_count > 0) { /* a count of 0 says nothing */
        if (last == z->expert_count) return last;
        if (z->expert_count == 1) return 1;
        *mismatch = true;
        return last ? last : 1;
    }
    if ((t->n_dims <= 2 && name_ends(t, ".weight")) || (t->n_dims == 1 && name_ends(t, ".bias")))
        return 1;
    return last ? last : 1;
}

static int compute_sizing(const sl_gguf *g, const char *arch, sizing *z)
{
    memset(z, 0, sizeof *z);
    if (arch) {
        char key[256];
        z->have_count = sl_gguf_get_u32(
            g, sl_arch_key(key, sizeof key, arch, SL_KEY_EXPERT_COUNT), &z->expert_count);
        z->have_used = sl_gguf_get_u32(
            g, sl_arch_key(key, sizeof key, arch, SL_KEY_EXPERT_USED_COUNT), &z->expert_used);
    }
    uint64_t n = sl_gguf_tensor_count(g);
    for (uint64_t i = 0; i < n; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        uint32_t l;
        const char *sfx;
        z->total += t->nbytes;
        if (!is_routed(t)) continue;
        z->routed += t->nbytes;
        if (layer_of(t, &l, &sfx) && l + 1 > z->n_layers) z->n_layers = l + 1;
    }
    z->dense = z->total - z->routed;
    if (z->n_layers) {
        z->layers = calloc(z->n_layers, sizeof *z->layers);
        if (!z->layers) return -1;
    }
    for (uint64_t i = 0; i < n; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        uint32_t l;
        const char *sfx;
        if (!is_routed(t) || !layer_of(t, &l, &sfx)) continue;
        layer_sz *ls = &z->layers[l];
        bool off;
        uint64_t e = experts_in(t, z, &off);
        if (off || (ls->has && ls->experts != e)) ls->mismatch = true;
        if (!ls->has || e > ls->experts) ls->experts = e;
        ls->has = true;
        ls->bytes += t->nbytes;
        uint64_t slice = t->nbytes / e;
        if (!strcmp(sfx, SL_T_FFN_GATE_EXPS)) ls->proj[P_GATE] += slice;
        else if (!strcmp(sfx, SL_T_FFN_UP_EXPS)) ls->proj[P_UP] += slice;
        else if (!strcmp(sfx, SL_T_FFN_DOWN_EXPS)) ls->proj[P_DOWN] += slice;
        else if (!strcmp(sfx, FFN_GATE_UP_EXPS)) { /* fused: each expert's rows [0, F)
                                                       gate, [F, 2F) up, same row size */
            ls->proj[P_GATE] += slice / 2;
            ls->proj[P_UP] += slice - slice / 2;
        } else ls->other += slice;
        ls->per_expert += slice;
    }
    for (uint32_t l = 0; l < z->n_layers; l++) z->n_expert_layers += z->layers[l].has;

    if (z->have_used && z->n_expert_layers) {
        z->have_cycle = true;
        for (uint32_t l = 0; l < z->n_layers; l++)
            z->cycle += (uint64_t)z->expert_used * z->layers[l].per_expert;
    }
    return 0;
}

static bool same_layer(const layer_sz *a, const layer_sz *b)
{
    return a->has == b->has && a->experts == b->experts && a->other == b->other &&
           !memcmp(a->proj, b->proj, sizeof a->proj);
}

/* ---- text ---------------------------------------------------------------- */

static bool has_prefix(const sl_gguf_str *s, const char *p)
{
    size_t n = strlen(p);
    return s->len >= n && !memcmp(s->ptr, p, n);
}

static void text_kv(FILE *f, const sl_gguf_kv *kv, int indent, int width)
{
    char key[SHOWN_MAX];
    fprintf(f, "%*s%-*s %-8s ", indent, "", width,
            shown(key, sizeof key, kv->key.ptr, (size_t)kv->key.len),
            sl_gguf_vtype_name(kv->value.type));
    text_value(f, &kv->value);
    fputc('\n', f);
}

typedef enum { SEC_GENERAL, SEC_ARCH, SEC_TOKENIZER, SEC_OTHER } section;

static section section_of(const sl_gguf_kv *kv, const char *arch, size_t arch_len)
{
    if (has_prefix(&kv->key, "general.")) return SEC_GENERAL;
    if (has_prefix(&kv->key, "tokenizer.")) return SEC_TOKENIZER;
    if (arch && kv->key.len > arch_len && !memcmp(kv->key.ptr, arch, arch_len) &&
        kv->key.ptr[arch_len] == '.')
        return SEC_ARCH;
    return SEC_OTHER;
}

static void text_section(FILE *f, const sl_gguf *g, section sec, const char *arch, int indent,
                         int width)
{
    size_t al = arch ? strlen(arch) : 0;
    for (uint64_t i = 0; i < sl_gguf_kv_count(g); i++) {
        const sl_gguf_kv *kv = sl_gguf_kv_at(g, i);
        if (section_of(kv, arch, al) == sec) text_kv(f, kv, indent, width);
    }
}

static uint64_t arr_len(const sl_gguf *g, const char *key, bool *present)
{
    const sl_gguf_array *a = sl_gguf_get_arr(g, key);
    *present = a != NULL;
    return a ? a->n : 0;
}

static void text_tokenizer(FILE *f, const sl_gguf *g, int width)
{
    bool has_tok, has_merges;
    const char *model = sl_gguf_get_str(g, "tokenizer.ggml.model");
    uint64_t vocab = arr_len(g, "tokenizer.ggml.tokens", &has_tok);
    uint64_t merges = arr_len(g, "tokenizer.ggml.merges", &has_merges);
    if (!model && !has_tok) {
        fprintf(f, "\ntokenizer: none\n");
        return;
    }
    const char *pre = sl_gguf_get_str(g, "tokenizer.ggml.pre");
    char b[SHOWN_MAX];
    fprintf(f, "\ntokenizer\n");
    fprintf(f, "  model           %s\n", model ? shown(b, sizeof b, model, strlen(model)) : "(not set)");
    fprintf(f, "  pre             %s\n", pre ? shown(b, sizeof b, pre, strlen(pre)) : "(not set)");
    fprintf(f, "  vocab size      %" PRIu64 "\n", vocab);
    if (has_merges) fprintf(f, "  merges          %" PRIu64 "\n", merges);
    else fprintf(f, "  merges          none\n");
    static const char *const ids[][2] = {
        {"bos id", "tokenizer.ggml.bos_token_id"},
        {"eos id", "tokenizer.ggml.eos_token_id"},
        {"eot id", "tokenizer.ggml.eot_token_id"},
        {"unknown id", "tokenizer.ggml.unknown_token_id"},
        {"padding id", "tokenizer.ggml.padding_token_id"},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        uint32_t v;
        if (sl_gguf_get_u32(g, ids[i][1], &v)) fprintf(f, "  %-15s %u\n", ids[i][0], v);
    }
    const sl_gguf_kv *ct = sl_gguf_find(g, "tokenizer.chat_template");
    if (ct && ct->value.type == SL_GGUF_STRING)
        fprintf(f, "  chat template   yes (%" PRIu64 " bytes)\n", ct->value.v.str.len);
    else fprintf(f, "  chat template   no\n");
    fprintf(f, "  keys\n");
    text_section(f, g, SEC_TOKENIZER, NULL, 4, width);
}

static void shape_str(char *b, size_t cap, const sl_gguf_tensor *t)
{
    size_t o = 0;
    o += (size_t)snprintf(b + o, cap - o, "[");
    for (uint32_t d = 0; d < t->n_dims && o < cap; d++)
        o += (size_t)snprintf(b + o, cap - o, "%s%" PRIu64, d ? ", " : "", t->ne[d]);
    if (o < cap) snprintf(b + o, cap - o, "]");
}

static void text_tensors(FILE *f, const sl_gguf *g)
{
    uint64_t n = sl_gguf_tensor_count(g);
    bool split = sl_gguf_file_count(g) > 1;
    int nw = 4;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l = sl_gguf_tensor_at(g, i)->name.len;
        if ((int)l > nw) nw = l > 60 ? 60 : (int)l;
    }
    fprintf(f, "\ntensors (%" PRIu64 ")\n", n);
    if (!n) return;
    fprintf(f, "  %5s  %-*s %-7s %-26s %s%14s %14s\n", "#", nw, "name", "type", "shape",
            split ? "part " : "", "offset", "bytes");
    char shape[96], name[SHOWN_MAX];
    for (uint64_t i = 0; i < n; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        shape_str(shape, sizeof shape, t);
        fprintf(f, "  %5" PRIu64 "  %-*s %-7s %-26s ", i, nw,
                shown(name, sizeof name, t->name.ptr, (size_t)t->name.len),
                sl_type_name((uint32_t)t->type), shape);
        if (split) fprintf(f, "%4u ", t->file_index + 1);
        fprintf(f, "%14" PRIu64 " %14" PRIu64 "\n", t->offset, t->nbytes);
    }
}

static void text_sizing(FILE *f, const sizing *z)
{
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(f, "\nsizing\n");
    fprintf(f, "  total tensor bytes    %14" PRIu64 "  (%s)\n", z->total, human(a, sizeof a, z->total));
    fprintf(f, "  dense bytes           %14" PRIu64 "  (%s)\n", z->dense, human(a, sizeof a, z->dense));
    fprintf(f, "  routed expert bytes   %14" PRIu64 "  (%s)\n", z->routed, human(a, sizeof a, z->routed));
    if (z->have_count) fprintf(f, "  expert count          %14u\n", z->expert_count);
    if (z->have_used) fprintf(f, "  experts used / token  %14u\n", z->expert_used);
    if (!z->n_expert_layers) {
        fprintf(f, "  no routed-expert tensors (*_exps*): nothing to stream\n");
        return;
    }
    fprintf(f, "  layers with experts   %14u\n", z->n_expert_layers);
    fprintf(f, "  per layer (bytes of one expert)\n");
    fprintf(f, "    %-14s %7s %14s %12s %12s %12s %12s\n", "layers", "experts", "per expert",
            "gate", "up", "down", "other");
    for (uint32_t l = 0; l < z->n_layers;) {
        uint32_t k = l + 1;
        while (k < z->n_layers && same_layer(&z->layers[l], &z->layers[k])) k++;
        const layer_sz *ls = &z->layers[l];
        char range[32];
        if (k - l == 1) snprintf(range, sizeof range, "%u", l);
        else snprintf(range, sizeof range, "%u-%u", l, k - 1);
        if (!ls->has) {
            fprintf(f, "    %-14s %7s\n", range, "none");
        } else {
            fprintf(f, "    %-14s %7" PRIu64 "%s %13s %12s %12s %12s %12s\n", range,
                    ls->experts, ls->mismatch ? "!" : " ", human(e, sizeof e, ls->per_expert),
                    human(a, sizeof a, ls->proj[P_GATE]), human(b, sizeof b, ls->proj[P_UP]),
                    human(c, sizeof c, ls->proj[P_DOWN]), human(d, sizeof d, ls->other));
        }
        l = k;
    }
    if (!z->have_cycle) {
        fprintf(f, "  expert cycle / token  unknown (no expert_used_count in the metadata)\n");
        return;
    }
    bool uniform = true;
    uint64_t pe = 0;
    for (uint32_t l = 0; l < z->n_layers; l++) {
        if (!z->layers[l].has) continue;
        if (pe && z->layers[l].per_expert != pe) uniform = false;
        pe = z->layers[l].per_expert;
    }
    if (uniform)
        fprintf(f, "  expert cycle / token  %14" PRIu64 "  (%s = %u layers x %u experts x %s)\n",
                z->cycle, human(a, sizeof a, z->cycle), z->n_expert_layers, z->expert_used,
                human(e, sizeof e, pe));
    else
        fprintf(f, "  expert cycle / token  %14" PRIu64 "  (%s = sum over %u layers of %u x "
                   "bytes per expert)\n",
                z->cycle, human(a, sizeof a, z->cycle), z->n_expert_layers, z->expert_used);
}

/* ---- layers: what the engine makes of the file ------------------------------ */

/* The layer pattern and state bytes, when sluice can describe the model:
 * loaded without its weights (describe_only). */
typedef struct layers_info {
    sl_model *m;        /* NULL: not described (see why) */
    char why[SL_ERR_MSG_MAX];
    uint64_t per_token, per_seq;
    uint64_t per_token_q8, per_token_q4; /* with q8_0 / q4_0 K and V (0: not possible) */
} layers_info;

static void describe_layers(const char *path, const sl_gguf *g, layers_info *li)
{
    memset(li, 0, sizeof *li);
    const char *arch = sl_gguf_get_str(g, "general.architecture");
    if (!arch || !sl_arch_find(arch)) return;
    sl_model_params mp = sl_model_default_params();
    mp.describe_only = true;
    sl_err err = {0};
    if (sl_model_load(&li->m, path, &mp, &err)) {
        snprintf(li->why, sizeof li->why, "%s", err.msg);
        li->m = NULL;
        return;
    }
    sl_model_state_bytes(li->m, &li->per_token, &li->per_seq);
    li->per_token_q8 = sl_model_kv_bytes_per_token(li->m, SL_KV_Q8_0, SL_KV_Q8_0);
    li->per_token_q4 = sl_model_kv_bytes_per_token(li->m, SL_KV_Q4_0, SL_KV_Q4_0);
}

/* gemma4's layer kinds, from its per-layer window pattern: which layers
 * slide (and over how many positions) and which attend to everything. */
static void text_gemma4_kinds(FILE *f, const sl_gguf *g)
{
    const sl_gguf_array *a = sl_gguf_get_arr(g, "gemma4.attention.sliding_window_pattern");
    uint32_t w = 0;
    sl_gguf_get_u32(g, "gemma4.attention.sliding_window", &w);
    if (!a || a->type != SL_GGUF_BOOL) return;
    for (int kind = 1; kind >= 0; kind--) {
        fprintf(f, "  %-14s", kind ? "sliding" : "full");
        int shown_n = 0;
        for (uint64_t i = 0; i < a->n && i < 4096; i++)
            if ((((const uint8_t *)a->data)[i] != 0) == kind)
                fprintf(f, "%s%llu", shown_n++ ? "," : "", (unsigned long long)i);
        if (!shown_n) fprintf(f, "none");
        if (kind) fprintf(f, " (window %u: their K/V need only the last %u positions)", w, w);
        fprintf(f, "\n");
    }
}

static void text_layers(FILE *f, const layers_info *li)
{
    if (!li->m && !li->why[0]) return;
    fprintf(f, "\nlayers\n");
    if (!li->m) {
        fprintf(f, "  cannot be described: %s\n", li->why);
        return;
    }
    const int n = sl_model_n_layer(li->m);
    fprintf(f, "  %-14s%d\n", "count", n);
    fprintf(f, "  %-14s", "mixers");
    for (int a = 0; a < n;) {
        int b = a;
        const char *k = sl_model_layer_mixer(li->m, a);
        while (b + 1 < n && !strcmp(sl_model_layer_mixer(li->m, b + 1), k)) b++;
        if (a) fprintf(f, ", ");
        if (b > a) fprintf(f, "%d-%d %s", a, b, k);
        else fprintf(f, "%d %s", a, k);
        a = b + 1;
    }
    char hb[32];
    fprintf(f, "\n  %-14s%" PRIu64 " bytes per token of context (%s, f16 K/V)\n", "state",
            li->per_token, human(hb, sizeof hb, li->per_token));
    if (li->per_token_q8 && li->per_token != li->per_token_q8)
        fprintf(f, "  %-14s%" PRIu64 " with -ctk/-ctv q8_0, %" PRIu64 " with q4_0\n", "",
                li->per_token_q8, li->per_token_q4);
    if (li->per_seq)
        fprintf(f, "  %-14s%" PRIu64 " bytes per sequence (%s; a session keeps a second copy "
                "as its snapshot)\n", "", li->per_seq, human(hb, sizeof hb, li->per_seq));
}

static void jw_layers(jw_out *j, const layers_info *li)
{
    if (!li->m) return;
    jw_key(j, "layers");
    jw_arr_begin_inline(j);
    for (int il = 0; il < sl_model_n_layer(li->m); il++) jw_str(j, sl_model_layer_mixer(li->m, il));
    jw_arr_end(j);
    jw_key(j, "state_bytes_per_token");
    jw_u64(j, li->per_token);
    jw_key(j, "state_bytes_per_sequence");
    jw_u64(j, li->per_seq);
    if (li->per_token_q8) { /* the KV cache in q8_0 / q4_0 (-ctk/-ctv), when possible */
        jw_key(j, "state_bytes_per_token_q8_0");
        jw_u64(j, li->per_token_q8);
        jw_key(j, "state_bytes_per_token_q4_0");
        jw_u64(j, li->per_token_q4);
    }
}

static void print_text(FILE *f, const sl_gguf *g, const sizing *z, const layers_info *li,
                       bool tensors)
{
    char hb[32], sb[SHOWN_MAX];
    for (uint32_t i = 0; i < sl_gguf_file_count(g); i++)
        fprintf(f, "%-12s%s (%" PRIu64 " bytes, %s), data at byte %" PRIu64 "\n",
                i ? "" : (sl_gguf_file_count(g) > 1 ? "files" : "file"),
                shown(sb, sizeof sb, sl_gguf_file_path(g, i), strlen(sl_gguf_file_path(g, i))),
                sl_gguf_file_size(g, i), human(hb, sizeof hb, sl_gguf_file_size(g, i)),
                sl_gguf_data_offset(g, i));
    fprintf(f, "%-12s%u\n", "version", sl_gguf_version(g));
    fprintf(f, "%-12s%" PRIu64 "\n", "alignment", sl_gguf_alignment(g));
    fprintf(f, "%-12s%" PRIu64 "\n", "metadata", sl_gguf_kv_count(g));
    fprintf(f, "%-12s%" PRIu64 "\n", "tensors", sl_gguf_tensor_count(g));

    const char *arch = sl_gguf_get_str(g, "general.architecture");
    int width = 8;
    for (uint64_t i = 0; i < sl_gguf_kv_count(g); i++) {
        uint64_t l = sl_gguf_kv_at(g, i)->key.len;
        if ((int)l > width) width = l > 48 ? 48 : (int)l;
    }
    fprintf(f, "\ngeneral\n");
    text_section(f, g, SEC_GENERAL, arch, 2, width);
    fprintf(f, "\narchitecture %s%s\n",
            arch ? shown(sb, sizeof sb, arch, strlen(arch)) : "(general.architecture not set)",
            arch && !sl_arch_find(arch) ? " (not supported by sluice for inference)" : "");
    text_section(f, g, SEC_ARCH, arch, 2, width);
    text_tokenizer(f, g, width);
    bool any_other = false;
    size_t al = arch ? strlen(arch) : 0;
    for (uint64_t i = 0; i < sl_gguf_kv_count(g); i++)
        if (section_of(sl_gguf_kv_at(g, i), arch, al) == SEC_OTHER) any_other = true;
    if (any_other) {
        fprintf(f, "\nother metadata\n");
        text_section(f, g, SEC_OTHER, arch, 2, width);
    }
    text_layers(f, li);
    if (li->m && arch && !strcmp(arch, "gemma4")) text_gemma4_kinds(f, g);
    if (tensors) text_tensors(f, g);
    text_sizing(f, z);
}

/* ---- json ---------------------------------------------------------------- */

static void jw_opt_u32(jw_out *j, const char *key, bool have, uint32_t v)
{
    jw_key(j, key);
    if (have) jw_u64(j, v);
    else jw_null(j);
}

/* Returns false when the document could not be built (out of memory) or
 * written. */
static bool print_json(FILE *f, const sl_gguf *g, const sizing *z, const layers_info *li,
                       bool tensors)
{
    jw_out j;
    jw_init(&j, f);
    jw_obj_begin(&j);
    jw_key(&j, "files");
    jw_arr_begin(&j);
    for (uint32_t i = 0; i < sl_gguf_file_count(g); i++) {
        jw_obj_begin_inline(&j);
        jw_key(&j, "path");
        jw_str(&j, sl_gguf_file_path(g, i));
        jw_key(&j, "size");
        jw_u64(&j, sl_gguf_file_size(g, i));
        jw_key(&j, "data_offset");
        jw_u64(&j, sl_gguf_data_offset(g, i));
        jw_obj_end(&j);
    }
    jw_arr_end(&j);
    jw_key(&j, "version");
    jw_u64(&j, sl_gguf_version(g));
    jw_key(&j, "alignment");
    jw_u64(&j, sl_gguf_alignment(g));
    jw_key(&j, "kv_count");
    jw_u64(&j, sl_gguf_kv_count(g));
    jw_key(&j, "tensor_count");
    jw_u64(&j, sl_gguf_tensor_count(g));
    const char *arch = sl_gguf_get_str(g, "general.architecture");
    jw_key(&j, "architecture");
    jw_str(&j, arch);

    jw_key(&j, "metadata");
    jw_obj_begin(&j);
    for (uint64_t i = 0; i < sl_gguf_kv_count(g); i++) {
        const sl_gguf_kv *kv = sl_gguf_kv_at(g, i);
        jw_keyn(&j, kv->key.ptr, (size_t)kv->key.len);
        jw_gguf_value(&j, &kv->value);
    }
    jw_obj_end(&j);

    jw_key(&j, "tokenizer");
    jw_obj_begin(&j);
    bool has_tok, has_merges;
    uint64_t vocab = arr_len(g, "tokenizer.ggml.tokens", &has_tok);
    uint64_t merges = arr_len(g, "tokenizer.ggml.merges", &has_merges);
    jw_key(&j, "model");
    jw_str(&j, sl_gguf_get_str(g, "tokenizer.ggml.model"));
    jw_key(&j, "pre");
    jw_str(&j, sl_gguf_get_str(g, "tokenizer.ggml.pre"));
    jw_key(&j, "vocab_size");
    jw_u64(&j, vocab);
    jw_key(&j, "merges");
    jw_u64(&j, merges);
    uint32_t v;
    bool h = sl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &v);
    jw_opt_u32(&j, "bos_id", h, v);
    h = sl_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &v);
    jw_opt_u32(&j, "eos_id", h, v);
    jw_key(&j, "has_chat_template");
    jw_bool(&j, sl_gguf_get_str(g, "tokenizer.chat_template") != NULL);
    jw_obj_end(&j);

    if (tensors) {
        jw_key(&j, "tensors");
        jw_arr_begin(&j);
        for (uint64_t i = 0; i < sl_gguf_tensor_count(g); i++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
            jw_obj_begin_inline(&j);
            jw_key(&j, "name");
            jw_strn(&j, t->name.ptr, (size_t)t->name.len);
            jw_key(&j, "type");
            jw_str(&j, sl_type_name((uint32_t)t->type));
            jw_key(&j, "shape");
            jw_arr_begin_inline(&j);
            for (uint32_t d = 0; d < t->n_dims; d++) jw_u64(&j, t->ne[d]);
            jw_arr_end(&j);
            jw_key(&j, "file");
            jw_u64(&j, t->file_index);
            jw_key(&j, "offset");
            jw_u64(&j, t->offset);
            jw_key(&j, "bytes");
            jw_u64(&j, t->nbytes);
            jw_obj_end(&j);
        }
        jw_arr_end(&j);
    }

    jw_layers(&j, li);
    jw_key(&j, "sizing");
    jw_obj_begin(&j);
    jw_key(&j, "total_bytes");
    jw_u64(&j, z->total);
    jw_key(&j, "dense_bytes");
    jw_u64(&j, z->dense);
    jw_key(&j, "routed_expert_bytes");
    jw_u64(&j, z->routed);
    jw_opt_u32(&j, "expert_count", z->have_count, z->expert_count);
    jw_opt_u32(&j, "expert_used_count", z->have_used, z->expert_used);
    jw_key(&j, "layers_with_experts");
    jw_u64(&j, z->n_expert_layers);
    jw_key(&j, "layers");
    jw_arr_begin(&j);
    for (uint32_t l = 0; l < z->n_layers; l++) {
        const layer_sz *ls = &z->layers[l];
        if (!ls->has) continue;
        jw_obj_begin_inline(&j);
        jw_key(&j, "layer");
        jw_u64(&j, l);
        jw_key(&j, "experts");
        jw_u64(&j, ls->experts);
        jw_key(&j, "bytes_per_expert");
        jw_u64(&j, ls->per_expert);
        for (int p = 0; p < P_COUNT; p++) {
            jw_key(&j, proj_names[p]);
            jw_u64(&j, ls->proj[p]);
        }
        jw_key(&j, "other");
        jw_u64(&j, ls->other);
        jw_key(&j, "routed_bytes");
        jw_u64(&j, ls->bytes);
        jw_obj_end(&j);
    }
    jw_arr_end(&j);
    jw_key(&j, "expert_cycle_bytes");
    if (z->have_cycle) jw_u64(&j, z->cycle);
    else jw_null(&j);
    jw_obj_end(&j);

    jw_obj_end(&j);
    return jw_done(&j);
}

int cmd_inspect(int argc, char **argv)
{
    bool json = false, tensors = true;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sluice inspect: %s needs a model file\n", a);
                return 2;
            }
            if (path) {
                fprintf(stderr, "sluice inspect: one model at a time ('%s' and '%s')\n", path,
                        argv[i + 1]);
                return 2;
            }
            path = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--tensors")) {
            tensors = true;
        } else if (!strcmp(a, "--no-tensors")) {
            tensors = false;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "sluice inspect: unknown option '%s'\n\n", a);
            usage(stderr);
            return 2;
        } else if (path) {
            fprintf(stderr, "sluice inspect: one model at a time ('%s' and '%s')\n", path, a);
            return 2;
        } else {
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "sluice inspect: no model given\n\n");
        usage(stderr);
        return 2;
    }
    sl_gguf *g;
    sl_err err = {0};
    if (sl_gguf_open(&g, path, &err)) {
        fprintf(stderr, "sluice inspect: %s\n", err.msg);
        return 1;
    }
    sizing z;
    if (compute_sizing(g, sl_gguf_get_str(g, "general.architecture"), &z)) {
        fprintf(stderr, "sluice inspect: out of memory\n");
        sl_gguf_close(g);
        return 1;
    }
    layers_info li;
    describe_layers(path, g, &li);
    bool built = true;
    if (json) built = print_json(stdout, g, &z, &li, tensors);
    else print_text(stdout, g, &z, &li, tensors);
    sl_model_free(li.m);
    free(z.layers);
    sl_gguf_close(g);
    if (!built || fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "sluice inspect: writing the output failed%s\n",
                built ? "" : " (out of memory building the JSON, or a write error)");
        return 1;
    }
    return 0;
}
