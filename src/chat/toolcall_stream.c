/* toolcall_stream.c - see toolcall_stream.h. */
#include "chat/toolcall_stream.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"

static const char OPEN[] = "<tool_call>", CLOSE[] = "</tool_call>";

void sl_tc_init(sl_tc_stream *s)
{
    memset(s, 0, sizeof *s);
}

void sl_tc_free(sl_tc_stream *s)
{
    for (int i = 0; i < s->n_calls; i++) {
        free(s->calls[i].name);
        free(s->calls[i].arguments);
    }
    free(s->buf);
    memset(s, 0, sizeof *s);
}

static char *dupn(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

bool sl_tc_add(sl_tc_stream *s, const char *name, const char *args, size_t args_len)
{
    if (s->n_calls == SL_TC_MAX) return false;
    char *n = dupn(name, strlen(name)), *a = dupn(args, args_len);
    if (!n || !a) {
        free(n);
        free(a);
        s->oom = true;
        return false;
    }
    s->calls[s->n_calls].name = n;
    s->calls[s->n_calls].arguments = a;
    s->n_calls++;
    return true;
}

static void buf_put(sl_tc_stream *s, const char *p, size_t n)
{
    if (s->n_buf + n + 1 > s->cap_buf) {
        size_t c = s->cap_buf ? s->cap_buf * 2 : 256;
        while (c < s->n_buf + n + 1) c *= 2;
        char *nb = realloc(s->buf, c);
        if (!nb) {
            s->oom = true;
            return;
        }
        s->buf = nb;
        s->cap_buf = c;
    }
    memcpy(s->buf + s->n_buf, p, n);
    s->n_buf += n;
    s->buf[s->n_buf] = '\0';
}

/* Qwen3.5's XML form "<function=NAME>\n<parameter=K>\nV\n</parameter>\n...
 * </function>" (whitespace around it allowed): each value is JSON when it
 * parses as JSON, else a string. A parsed call, or false. */
static bool take_xml_call(sl_tc_stream *s)
{
    const char *p = s->buf, *end = s->buf + s->n_buf;
    while (p < end && strchr(" \t\r\n", *p)) p++;
    if ((size_t)(end - p) < 10 || memcmp(p, "<function=", 10)) return false;
    const char *nm = p + 10, *gt = memchr(nm, '>', (size_t)(end - nm));
    if (!gt || gt == nm) return false;
    const char *fend = strstr(gt, "</function>");
    if (!fend) return false;
    json_t *args = json_object();
    bool ok = args != NULL;
    for (const char *q = strstr(gt, "<parameter="); ok && q && q < fend;
         q = strstr(q, "<parameter=")) {
        const char *k = q + 11, *kgt = strchr(k, '>');
        const char *vend = kgt ? strstr(kgt, "</parameter>") : NULL;
        if (!kgt || !vend || vend > fend) {
            ok = false;
            break;
        }
        const char *v = kgt + 1;
        if (v < vend && *v == '\n') v++;
        const char *ve = vend;
        if (ve > v && ve[-1] == '\n') ve--;
        /* a value is JSON (any type) when it parses as such; nesting is
         * bounded by sl_json_depth as for the JSON form */
        json_t *jv = sl_json_depth(v, (size_t)(ve - v)) <= 64
                         ? json_loadb(v, (size_t)(ve - v), JSON_DECODE_ANY, NULL)
                         : NULL;
        if (!jv) jv = json_stringn(v, (size_t)(ve - v));
        char *key = dupn(k, (size_t)(kgt - k));
        ok = jv && key && !json_object_set_new(args, key, jv);
        if (!ok && !key) json_decref(jv);
        free(key);
        q = vend + 12;
    }
    char *name = ok ? dupn(nm, (size_t)(gt - nm)) : NULL;
    char *a = ok && name ? json_dumps(args, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    ok = a && sl_tc_add(s, name, a, strlen(a));
    free(a);
    free(name);
    json_decref(args);
    return ok;
}

/* The call text in buf: a parsed call, or false (then it is content). */
static bool take_call(sl_tc_stream *s)
{
    if (take_xml_call(s)) return true;
    json_t *v = NULL;
    sl_err err = {0};
    if (sl_json_parse(s->buf, s->n_buf, 64, &v, &err)) return false;
    const json_t *name = json_object_get(v, "name"), *args = json_object_get(v, "arguments");
    bool ok = json_is_string(name) && (!args || json_is_object(args) || json_is_string(args));
    if (ok) {
        char *a = NULL;
        if (json_is_string(args)) a = dupn(json_string_value(args), json_string_length(args));
        else if (args) a = json_dumps(args, JSON_COMPACT | JSON_REAL_PRECISION(15));
        else a = dupn("{}", 2);
        ok = a && sl_tc_add(s, json_string_value(name), a, strlen(a));
        free(a);
    }
    json_decref(v);
    return ok;
}

static void feed_char(sl_tc_stream *s, char c, sl_tc_out out, void *ud)
{
    if (!s->in_call) {
        if (s->n_hold == 0 && c != '<') {
            out(ud, &c, 1);
            return;
        }
        s->hold[s->n_hold++] = c;
        if (memcmp(s->hold, OPEN, s->n_hold)) {
            char tmp[sizeof s->hold];
            size_t h = s->n_hold;
            memcpy(tmp, s->hold, h);
            s->n_hold = 0;
            out(ud, tmp, 1);
            for (size_t i = 1; i < h; i++) feed_char(s, tmp[i], out, ud);
        } else if (s->n_hold == sizeof OPEN - 1) {
            s->n_hold = 0;
            s->in_call = true;
            s->n_buf = 0;
        }
        return;
    }
    buf_put(s, &c, 1);
    if (s->n_buf >= sizeof CLOSE - 1 &&
        !memcmp(s->buf + s->n_buf - (sizeof CLOSE - 1), CLOSE, sizeof CLOSE - 1)) {
        s->n_buf -= sizeof CLOSE - 1;
        s->buf[s->n_buf] = '\0';
        s->in_call = false;
        if (!take_call(s)) {
            out(ud, OPEN, sizeof OPEN - 1);
            out(ud, s->buf, s->n_buf);
            out(ud, CLOSE, sizeof CLOSE - 1);
        }
        s->n_buf = 0;
    }
}

void sl_tc_feed(sl_tc_stream *s, const char *text, size_t len, sl_tc_out out, void *ud)
{
    size_t i = 0;
    while (i < len) {
        if (!s->in_call && s->n_hold == 0) {
            size_t j = i;
            while (j < len && text[j] != '<') j++;
            if (j > i) out(ud, text + i, j - i);
            if (j == len) return;
            i = j;
        }
        feed_char(s, text[i++], out, ud);
    }
}

void sl_tc_finish(sl_tc_stream *s, sl_tc_out out, void *ud)
{
    if (s->n_hold) out(ud, s->hold, s->n_hold);
    s->n_hold = 0;
    if (s->in_call) {
        out(ud, OPEN, sizeof OPEN - 1);
        if (s->n_buf) out(ud, s->buf, s->n_buf);
    }
    s->in_call = false;
    s->n_buf = 0;
}
