/* api.c - the public face of the tokenizer, the sampler and the chat
 * templates (include/sluice.h): thin wrappers that check arguments, map the
 * public types onto the internal ones and own nothing the modules do not.
 *
 * Owns: the opaque sl_detok, sl_sampling and sl_chat objects. Must not
 * know: how tokens are encoded, how a sampler draws, how a template is
 * rendered (those are src/tok, src/sample, src/chat), nor the forward pass. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "engine/kv_rows.h"
#include "engine/mixer.h"
#include "engine/session_layout.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "sluice.h"
#include "tok/tokenizer.h"
#include "util/status.h"

static int no_tokenizer(sl_err *err)
{
    return sl_err_set(err, SL_EUNSUPPORTED, "the model file has no tokenizer "
                      "(tokenizer.ggml.model is missing)");
}

/* ---- tokens ------------------------------------------------------------- */

int sl_model_n_tokens(const sl_model *m)
{
    return m->tok ? (int)sl_tokenizer_n_tokens(m->tok) : 0;
}

int32_t sl_model_token_bos(const sl_model *m)
{
    return m->tok ? sl_tokenizer_bos(m->tok) : SL_TOKEN_NONE;
}

int32_t sl_model_token_eos(const sl_model *m)
{
    return m->tok ? sl_tokenizer_eos(m->tok) : SL_TOKEN_NONE;
}

bool sl_model_token_is_eog(const sl_model *m, int32_t id)
{
    return m->tok && sl_tokenizer_is_eog(m->tok, id);
}

bool sl_model_add_bos(const sl_model *m)
{
    return m->tok && sl_tokenizer_add_bos(m->tok) && sl_tokenizer_bos(m->tok) != SL_TOK_NONE;
}

int sl_tokenize(const sl_model *m, const char *text, size_t len, int32_t *ids, int n_max,
                unsigned flags, sl_err *err)
{
    if (!m->tok) return no_tokenizer(err);
    if ((!text && len > 0) || n_max < 0 || (!ids && n_max > 0))
        return sl_err_set(err, SL_EINVAL, "tokenize: NULL text or buffer, or n_max %d < 0",
                          n_max);
    unsigned f = 0;
    if (flags & SL_TOKENIZE_ADD_BOS) f |= SL_TOK_ADD_BOS;
    if (flags & SL_TOKENIZE_PARSE_SPECIAL) f |= SL_TOK_PARSE_SPECIAL;
    sl_tok_ids v = {0};
    int rc = sl_tokenizer_encode(m->tok, text ? text : "", len, f, &v, err);
    if (rc) goto done;
    if (v.n > INT_MAX) {
        rc = sl_err_set(err, SL_EINVAL, "tokenize: the text gives %zu tokens, more than %d",
                        v.n, INT_MAX);
        goto done;
    }
    rc = (int)v.n;
    if (v.n <= (size_t)n_max && v.n) memcpy(ids, v.ids, v.n * sizeof *ids);
done:
    sl_tok_ids_free(&v);
    return rc;
}

const char *sl_token_piece(const sl_model *m, int32_t id, bool special, size_t *len)
{
    *len = 0;
    if (!m->tok) return NULL;
    return sl_tokenizer_piece(m->tok, id, special, len);
}

static unsigned detok_flags(unsigned flags)
{
    unsigned f = 0;
    if (flags & SL_DETOK_SPECIAL) f |= SL_TOK_DECODE_SPECIAL;
    if (flags & SL_DETOK_STRIP_SPACE) f |= SL_TOK_DECODE_STRIP_PREFIX_SPACE;
    return f;
}

int sl_detokenize(const sl_model *m, const int32_t *ids, int n, char *buf, size_t cap,
                  unsigned flags, sl_err *err)
{
    if (!m->tok) return no_tokenizer(err);
    if (n < 0 || (!ids && n > 0) || (!buf && cap > 0))
        return sl_err_set(err, SL_EINVAL, "detokenize: NULL ids or buffer, or n %d < 0", n);
    const int32_t n_tok = (int32_t)sl_tokenizer_n_tokens(m->tok);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_tok)
            return sl_err_set(err, SL_EINVAL, "detokenize: token id %d at index %d is outside "
                              "the vocabulary [0, %d)", ids[i], i, n_tok);
    char *text = NULL;
    size_t len = 0;
    int rc = sl_tokenizer_decode(m->tok, ids, (size_t)n, detok_flags(flags), &text, &len, err);
    if (rc) return rc;
    if (len > INT_MAX) {
        free(text);
        return sl_err_set(err, SL_EINVAL, "detokenize: the text is %zu bytes, more than %d",
                          len, INT_MAX);
    }
    if (len < cap) {
        memcpy(buf, text, len);
        buf[len] = '\0';
    }
    free(text);
    return (int)len;
}

struct sl_detok {
    sl_tok_decoder dec;
};

int sl_detok_create(sl_detok **out, const sl_model *m, unsigned flags, sl_err *err)
{
    *out = NULL;
    if (!m->tok) return no_tokenizer(err);
    sl_detok *d = calloc(1, sizeof *d);
    if (!d) return sl_err_set(err, SL_ENOMEM, "out of memory");
    int rc = sl_tok_decoder_init(&d->dec, m->tok, detok_flags(flags), err);
    if (rc) {
        free(d);
        return rc;
    }
    *out = d;
    return SL_OK;
}

void sl_detok_free(sl_detok *d)
{
    if (!d) return;
    sl_tok_decoder_free(&d->dec);
    free(d);
}

int sl_detok_push(sl_detok *d, int32_t id, const char **text, size_t *len, sl_err *err)
{
    *text = "";
    *len = 0;
    return sl_tok_decoder_push(&d->dec, id, text, len, err);
}

void sl_detok_flush(sl_detok *d, const char **text, size_t *len)
{
    sl_tok_decoder_flush(&d->dec, text, len);
    sl_tok_decoder_reset(&d->dec); /* keeps the output buffer: *text stays valid */
}

/* ---- sampling ------------------------------------------------------------ */

struct sl_sampling {
    sl_sampler s;
};

sl_sampling_params sl_sampling_default_params(void)
{
    sl_sampler_config c = sl_sampler_config_default();
    sl_sampling_params p = {
        .temp = c.temp,
        .top_k = c.top_k,
        .top_p = c.top_p,
        .min_p = c.min_p,
        .repeat_penalty = c.repeat_penalty,
        .presence_penalty = c.presence_penalty,
        .frequency_penalty = c.frequency_penalty,
        .penalty_last_n = c.repeat_last_n,
        .seed = c.seed,
    };
    return p;
}

int sl_sampling_create(sl_sampling **out, const sl_sampling_params *p, int n_vocab,
                       sl_err *err)
{
    *out = NULL;
    sl_sampling_params d = p ? *p : sl_sampling_default_params();
    sl_sampler_config c = {
        .temp = d.temp,
        .top_k = d.top_k,
        .top_p = d.top_p,
        .min_p = d.min_p,
        .repeat_penalty = d.repeat_penalty,
        .presence_penalty = d.presence_penalty,
        .frequency_penalty = d.frequency_penalty,
        .repeat_last_n = d.penalty_last_n,
        .seed = d.seed,
    };
    sl_sampling *s = calloc(1, sizeof *s);
    if (!s) return sl_err_set(err, SL_ENOMEM, "out of memory");
    int rc = sl_sampler_init(&s->s, &c, n_vocab, err);
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return SL_OK;
}

void sl_sampling_free(sl_sampling *s)
{
    if (!s) return;
    sl_sampler_free(&s->s);
    free(s);
}

int sl_sampling_sample(sl_sampling *s, const float *logits, sl_err *err)
{
    if (!logits) return sl_err_set(err, SL_EINVAL, "sample: no logits (nothing evaluated yet)");
    return sl_sampler_sample(&s->s, logits, err);
}

int sl_sampling_sample_draft(sl_sampling *s, const float *logits, int32_t draft, sl_err *err)
{
    if (!logits) return sl_err_set(err, SL_EINVAL, "sample: no logits (nothing evaluated yet)");
    return sl_sampler_sample_pref(&s->s, logits, draft, err);
}

int sl_sampling_accept(sl_sampling *s, int32_t id, sl_err *err)
{
    return sl_sampler_accept(&s->s, id, err);
}

void sl_sampling_reset(sl_sampling *s) { sl_sampler_reset(&s->s); }

/* ---- chat templates -------------------------------------------------------- */

#define CHAT_MAX_STOP_IDS 8

struct sl_chat {
    const sl_model *m;
    sl_chat_template t;
    int32_t stop_ids[CHAT_MAX_STOP_IDS]; /* tokens whose text is a stop marker */
    int n_stop_ids;
};

/* The vocabulary text of a special token, NUL-terminated in a new buffer,
 * or NULL if the token is absent. */
static char *token_text_dup(const sl_tokenizer *tok, int32_t id, bool *oom)
{
    size_t n = 0;
    const char *t = id == SL_TOK_NONE ? NULL : sl_tokenizer_token_text(tok, id, &n);
    if (!t) return NULL;
    char *s = malloc(n + 1);
    if (!s) {
        *oom = true;
        return NULL;
    }
    memcpy(s, t, n);
    s[n] = '\0';
    return s;
}

int sl_chat_create(sl_chat **out, const sl_model *m, const char *name, bool enable_thinking,
                   sl_err *err)
{
    *out = NULL;
    if (!m->tok) return no_tokenizer(err);
    sl_chat *c = calloc(1, sizeof *c);
    if (!c) return sl_err_set(err, SL_ENOMEM, "out of memory");
    c->m = m;
    bool oom = false;
    /* BOS as text only when the tokenizer will not add it (see chat.h) */
    char *bos = sl_model_add_bos(m) ? NULL : token_text_dup(m->tok, sl_tokenizer_bos(m->tok), &oom);
    char *eos = token_text_dup(m->tok, sl_tokenizer_eos(m->tok), &oom);
    int rc;
    if (oom) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        goto fail;
    }
    sl_chat_opts o = sl_chat_opts_default();
    o.name = name;
    o.bos_text = bos;
    o.eos_text = eos;
    o.enable_thinking = enable_thinking;
    const char *jinja = sl_gguf_get_str(m->gguf, "tokenizer.chat_template");
    if ((rc = sl_chat_template_init(&c->t, jinja, &o, err))) goto fail;
    for (const char *const *st = sl_chat_stop_strings(&c->t); *st; st++) {
        int32_t id = sl_tokenizer_find(m->tok, *st, strlen(*st));
        if (id != SL_TOK_NONE && c->n_stop_ids < CHAT_MAX_STOP_IDS) c->stop_ids[c->n_stop_ids++] = id;
    }
    free(bos);
    free(eos);
    *out = c;
    return SL_OK;
fail:
    free(bos);
    free(eos);
    sl_chat_template_free(&c->t);
    free(c);
    return rc;
}

const char *sl_chat_warning(const sl_chat *c) { return sl_chat_template_warning(&c->t); }

/* A header value as the public sl_meta_value. */
static void meta_value(const sl_gguf_value *g, sl_meta_value *v)
{
    memset(v, 0, sizeof *v);
    switch (g->type) {
    case SL_GGUF_UINT8:
    case SL_GGUF_UINT16:
    case SL_GGUF_UINT32:
    case SL_GGUF_UINT64:
        v->kind = SL_META_UINT;
        v->u = g->v.u64;
        break;
    case SL_GGUF_INT8:
    case SL_GGUF_INT16:
    case SL_GGUF_INT32:
    case SL_GGUF_INT64:
        v->kind = SL_META_INT;
        v->i = g->v.i64;
        break;
    case SL_GGUF_FLOAT32:
    case SL_GGUF_FLOAT64:
        v->kind = SL_META_FLOAT;
        v->f = g->v.f64;
        break;
    case SL_GGUF_BOOL:
        v->kind = SL_META_BOOL;
        v->b = g->v.b;
        break;
    case SL_GGUF_STRING:
        v->kind = SL_META_STRING;
        v->str = g->v.str.ptr;
        v->len = (size_t)g->v.str.len;
        break;
    default:
        v->kind = SL_META_OTHER;
    }
}

uint64_t sl_model_meta_count(const sl_model *m) { return sl_gguf_kv_count(m->gguf); }

bool sl_model_meta_at(const sl_model *m, uint64_t i, const char **key, sl_meta_value *v)
{
    if (i >= sl_gguf_kv_count(m->gguf)) return false;
    const sl_gguf_kv *kv = sl_gguf_kv_at(m->gguf, i);
    *key = kv->key.ptr;
    meta_value(&kv->value, v);
    return true;
}

bool sl_model_meta_get(const sl_model *m, const char *key, sl_meta_value *v)
{
    const sl_gguf_kv *kv = sl_gguf_find(m->gguf, key);
    if (!kv) return false;
    meta_value(&kv->value, v);
    return true;
}

void sl_model_file_totals(const sl_model *m, uint64_t *bytes, uint64_t *n_tensors,
                          uint64_t *n_params)
{
    const sl_gguf *g = m->gguf;
    *bytes = *n_params = 0;
    *n_tensors = sl_gguf_tensor_count(g);
    for (uint64_t i = 0; i < *n_tensors; i++) *n_params += sl_gguf_tensor_at(g, i)->n_elements;
    for (uint32_t i = 0; i < sl_gguf_file_count(g); i++) *bytes += sl_gguf_file_size(g, i);
}

sl_chat_family sl_chat_family_of(const sl_chat *c) { return c->t.family; }
bool sl_chat_takes_tools(const sl_chat *c) { return sl_chat_has_tools(&c->t); }
bool sl_chat_think_prefix(const sl_chat *c) { return c->t.think_prefix; }

/* Copies a known reasoning effort into dst (8 bytes); SL_EINVAL otherwise. */
static int set_effort(char *dst, size_t cap, const char *effort, sl_err *err)
{
    if (strcmp(effort, "low") && strcmp(effort, "medium") && strcmp(effort, "high"))
        return sl_err_set(err, SL_EINVAL, "reasoning effort '%.20s' is not low, medium or high",
                          effort);
    snprintf(dst, cap, "%s", effort);
    return SL_OK;
}

int sl_chat_set_effort(sl_chat *c, const char *effort, sl_err *err)
{
    return set_effort(c->t.effort, sizeof c->t.effort, effort, err);
}

int sl_chat_format_turns(const sl_chat *c, const sl_chat_turn *turns, size_t n,
                         const char *tools_json, int thinking, const char *effort,
                         bool add_generation_prompt, char **out, sl_err *err)
{
    sl_chat_template t = c->t; /* a shallow copy: only thinking and the effort differ */
    *out = NULL;
    if (thinking >= 0) t.enable_thinking = thinking != 0;
    int rc = effort ? set_effort(t.effort, sizeof t.effort, effort, err) : SL_OK;
    if (rc) return rc;
    return sl_chat_render_turns(&t, turns, n, tools_json, add_generation_prompt, false, out, err);
}

int sl_model_n_layer(const sl_model *m) { return m->hp.n_layer; }

const char *sl_model_layer_mixer(const sl_model *m, int il)
{
    if (il < 0 || il >= m->hp.n_layer) return NULL;
    const sl_layer_desc *d = &m->layers[il].d;
    if (d->mixer == SL_MIXER_DS4) /* deepseek4: its compression ratio */
        return d->ds4.ratio == 4 ? "ds4-ratio4" : d->ds4.ratio == 128 ? "ds4-ratio128" : "ds4-window";
    return sl_mixer_of(d->mixer)->name;
}

void sl_model_state_bytes(const sl_model *m, uint64_t *per_token, uint64_t *per_seq)
{
    uint64_t rows[2];
    sl_session_state_bytes(m, 2, rows, per_seq); /* f16 K/V; file dimensions cannot overflow */
    *per_token = rows[0] + rows[1];
}

uint64_t sl_model_kv_bytes_at(const sl_model *m, sl_kv_type type_k, sl_kv_type type_v, int n_ctx,
                              int n_batch, bool swa_full)
{
    uint64_t b;
    if (n_ctx < 1 || n_batch < 1 || !sl_kv_type_ok((int)type_k) || !sl_kv_type_ok((int)type_v) ||
        sl_session_kv_misfit(m, type_k, type_v) >= 0 ||
        !sl_session_kv_bytes_at(m, 2, type_k, type_v, n_ctx, n_batch, !swa_full, &b))
        return 0;
    return b;
}

const char *sl_model_warning(const sl_model *m, int i)
{
    const char *w[2] = {m->tok ? sl_tokenizer_pre_warning(m->tok) : NULL,
                        m->tok ? sl_tokenizer_id_warning(m->tok) : NULL};
    for (int k = 0; k < 2; k++)
        if (w[k] && w[k][0] && i-- == 0) return w[k];
    return NULL;
}

void sl_chat_free(sl_chat *c)
{
    if (!c) return;
    sl_chat_template_free(&c->t);
    free(c);
}

const char *sl_chat_name(const sl_chat *c) { return sl_chat_family_name(c->t.family); }

/* sl_chat_message and sl_chat_msg have the same two fields; copying keeps
 * the public type independent of the internal one. */
static int to_msgs(const sl_chat_message *msgs, size_t n, sl_chat_msg **out, sl_err *err)
{
    *out = calloc(n ? n : 1, sizeof **out);
    if (!*out) return sl_err_set(err, SL_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) (*out)[i] = (sl_chat_msg){msgs[i].role, msgs[i].content};
    return SL_OK;
}

static int format(const sl_chat *c, const sl_chat_message *msgs, size_t n, bool gen, bool next,
                  char **out, sl_err *err)
{
    *out = NULL;
    if (!msgs && n > 0) return sl_err_set(err, SL_EINVAL, "chat: NULL messages");
    sl_chat_msg *mm;
    int rc = to_msgs(msgs, n, &mm, err);
    if (rc) return rc;
    rc = next ? sl_chat_render_continue(&c->t, mm, n, gen, out, err)
              : sl_chat_render(&c->t, mm, n, gen, out, err);
    free(mm);
    return rc;
}

int sl_chat_format(const sl_chat *c, const sl_chat_message *msgs, size_t n,
                   bool add_generation_prompt, char **out, sl_err *err)
{
    return format(c, msgs, n, add_generation_prompt, false, out, err);
}

int sl_chat_format_next(const sl_chat *c, const sl_chat_message *msgs, size_t n,
                        bool add_generation_prompt, char **out, sl_err *err)
{
    return format(c, msgs, n, add_generation_prompt, true, out, err);
}

bool sl_chat_is_stop_token(const sl_chat *c, int32_t id)
{
    if (sl_tokenizer_is_eog(c->m->tok, id)) return true;
    for (int i = 0; i < c->n_stop_ids; i++)
        if (c->stop_ids[i] == id) return true;
    return false;
}

const char *const *sl_chat_stop_texts(const sl_chat *c) { return sl_chat_stop_strings(&c->t); }
