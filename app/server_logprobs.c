/* server_logprobs.c - see server_logprobs.h. */
#include "server_logprobs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool srv_lps_record(srv_lps *l, const float *logits, int n_vocab, int32_t id)
{
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 64;
        srv_lp *nv = realloc(l->v, (size_t)nc * sizeof *nv);
        if (!nv) return false;
        l->v = nv;
        l->cap = nc;
    }
    /* log-softmax: max, then the log of the sum of exp(logit - max) */
    float mx = -INFINITY;
    for (int i = 0; i < n_vocab; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - (double)mx);
    const double lse = (double)mx + log(sum);
    srv_lp *e = &l->v[l->n++];
    memset(e, 0, sizeof *e);
    e->id = id;
    e->lp = (float)((double)logits[id] - lse);
    /* the n_top largest, in descending order (ties: lower id first) */
    const int k = l->n_top > SRV_MAX_TOP_LOGPROBS ? SRV_MAX_TOP_LOGPROBS : l->n_top;
    for (int i = 0; i < n_vocab && k > 0; i++) {
        float x = logits[i];
        if (e->n_top == k && !(x > e->top_lp[k - 1])) continue;
        int pos = e->n_top < k ? e->n_top++ : k - 1;
        while (pos > 0 && x > e->top_lp[pos - 1]) {
            e->top_lp[pos] = e->top_lp[pos - 1];
            e->top_id[pos] = e->top_id[pos - 1];
            pos--;
        }
        e->top_lp[pos] = x;
        e->top_id[pos] = i;
    }
    for (int t = 0; t < e->n_top; t++) e->top_lp[t] = (float)((double)e->top_lp[t] - lse);
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
