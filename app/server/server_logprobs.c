/* server_logprobs.c - see server_logprobs.h. */
#include "server_logprobs.h"

#include <stdlib.h>
#include <string.h>

bool srv_lps_add(srv_lps *l, const srv_lp *e)
{
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 64;
        srv_lp *nv = realloc(l->v, (size_t)nc * sizeof *nv);
        if (!nv) return false;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = *e;
    return true;
}

/* The token's text (lossy UTF-8: a piece may be part of a character) and
 * its bytes. */
static json_t *token_str(const sl_model *m, int32_t id)
{
    size_t len = 0;
    const char *p = sl_token_piece(m, id, true, &len);
    return sl_json_string_lossy(p ? p : "", len);
}

static json_t *token_bytes(const sl_model *m, int32_t id)
{
    size_t len = 0;
    const char *p = sl_token_piece(m, id, true, &len);
    json_t *a = json_array();
    for (size_t i = 0; a && i < len; i++) json_array_append_new(a, json_integer((unsigned char)p[i]));
    return a;
}

json_t *srv_lps_chat(const sl_model *m, const srv_lps *l, int from, int to)
{
    json_t *arr = json_array();
    for (int i = from; arr && i < to; i++) {
        const srv_lp *e = &l->v[i];
        json_t *top = json_array();
        for (int t = 0; top && t < e->n_top; t++)
            json_array_append_new(top, json_pack("{s:o, s:o, s:o}", "token", token_str(m, e->top_id[t]),
                                                 "logprob", sl_json_real_f32(e->top_lp[t]), "bytes",
                                                 token_bytes(m, e->top_id[t])));
        json_t *o = json_pack("{s:o, s:o, s:o, s:o}", "token", token_str(m, e->id), "logprob",
                              sl_json_real_f32(e->lp), "bytes", token_bytes(m, e->id),
                              "top_logprobs", top);
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

json_t *srv_lps_completion(const sl_model *m, const srv_lps *l, int from, int to,
                           size_t text_base)
{
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    size_t off = text_base;
    for (int i = from; toks && lps && tops && offs && i < to; i++) {
        const srv_lp *e = &l->v[i];
        json_array_append_new(toks, token_str(m, e->id));
        json_array_append_new(lps, sl_json_real_f32(e->lp));
        json_t *top = json_object();
        for (int t = 0; top && t < e->n_top; t++) {
            json_t *ks = token_str(m, e->top_id[t]);
            if (ks) json_object_setn_new(top, json_string_value(ks), json_string_length(ks),
                                         sl_json_real_f32(e->top_lp[t]));
            json_decref(ks);
        }
        json_array_append_new(tops, top);
        json_array_append_new(offs, json_integer((json_int_t)off));
        size_t len = 0;
        sl_token_piece(m, e->id, false, &len);
        off += len;
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs",
                     tops, "text_offset", offs);
}
