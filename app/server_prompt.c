/* server_prompt.c - turning a request into a job, for every API of
 * `sluice serve` (server.h): messages rendered with the model's chat
 * template, the prompt tokenized and checked against a slot's context,
 * sampling, limits and stop texts read from the body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "server_req.h"

#define MSG_CAP 512

/* The text of a message's content: a string, or an array of parts of
 * which the {"type": "text"} ones count. *out is malloc'd. */
static bool content_text(const json_t *c, int idx, char **out, char *msg)
{
    char where[48];
    if (idx < 0) snprintf(where, sizeof where, "system");
    else snprintf(where, sizeof where, "messages[%d].content", idx);
    if (!c || json_is_null(c)) {
        *out = strdup("");
        return *out != NULL;
    }
    if (json_is_string(c)) {
        if (memchr(json_string_value(c), 0, json_string_length(c))) {
            snprintf(msg, MSG_CAP, "%s holds a NUL character", where);
            return false;
        }
        *out = strdup(json_string_value(c));
        return *out != NULL;
    }
    if (!json_is_array(c)) {
        snprintf(msg, MSG_CAP, "%s must be a string or an array of parts, got %s", where,
                 req_type_name(c));
        return false;
    }
    size_t total = 1, i;
    const json_t *p;
    json_array_foreach(c, i, p) {
        const json_t *t = json_object_get(p, "type"), *x = json_object_get(p, "text");
        if (!json_is_object(p) || !json_is_string(t)) {
            snprintf(msg, MSG_CAP, "%s[%zu] must be an object with a 'type'", where, i);
            return false;
        }
        if (strcmp(json_string_value(t), "text")) {
            snprintf(msg, MSG_CAP, "%s[%zu]: parts of type '%.40s' are not supported yet "
                     "(only 'text')", where, i, json_string_value(t));
            return false;
        }
        if (!json_is_string(x) || memchr(json_string_value(x), 0, json_string_length(x))) {
            snprintf(msg, MSG_CAP, "%s[%zu].text must be a string", where, i);
            return false;
        }
        total += json_string_length(x);
    }
    char *buf = malloc(total);
    if (!buf) return false;
    size_t n = 0;
    json_array_foreach(c, i, p) {
        const json_t *x = json_object_get(p, "text");
        memcpy(buf + n, json_string_value(x), json_string_length(x));
        n += json_string_length(x);
    }
    buf[n] = '\0';
    *out = buf;
    return true;
}

srv_reply srv_render_chat(srv *s, srv_api api, const json_t *system, const json_t *messages,
                          char **prompt)
{
    char msg[MSG_CAP];
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return srv_error(api, 400, "'messages' must be a non-empty array");
    const size_t n_sys = system && !json_is_null(system) ? 1 : 0;
    size_t n = json_array_size(messages) + n_sys;
    if (n > 100000) return srv_error(api, 400, "'messages' holds more than 100000");
    sl_chat_message *msgs = calloc(n, sizeof *msgs);
    char **texts = calloc(n, sizeof *texts);
    srv_reply r = {0, NULL, NULL};
    if (!msgs || !texts) {
        r = srv_error(api, 500, "out of memory");
        goto out;
    }
    if (n_sys) {
        if (!content_text(system, -1, &texts[0], msg)) {
            r = texts[0] || msg[0] ? srv_error(api, 400, "%s", msg)
                                   : srv_error(api, 500, "out of memory");
            goto out;
        }
        msgs[0].role = "system";
        msgs[0].content = texts[0];
    }
    for (size_t i = n_sys; i < n; i++) {
        const json_t *m = json_array_get(messages, i - n_sys);
        const json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role)) {
            r = srv_error(api, 400, "messages[%zu] must be an object with a string "
                          "'role'", i - n_sys);
            goto out;
        }
        const char *rs = json_string_value(role);
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") &&
            strcmp(rs, "developer")) {
            r = srv_error(api, 400, "messages[%zu].role '%.40s' is not supported "
                          "(system, developer, user, assistant)", i - n_sys, rs);
            goto out;
        }
        if (!content_text(json_object_get(m, "content"), (int)(i - n_sys), &texts[i], msg)) {
            r = texts[i] || msg[0] ? srv_error(api, 400, "%s", msg)
                                   : srv_error(api, 500, "out of memory");
            goto out;
        }
        msgs[i].role = strcmp(rs, "developer") ? rs : "system";
        msgs[i].content = texts[i];
    }
    sl_err err = {0};
    if (sl_chat_format(s->chat, msgs, n, true, prompt, &err))
        r = srv_error(api, err.code == SL_ENOMEM ? 500 : 400,
                      "the messages do not fit the chat template %s: %s", sl_chat_name(s->chat),
                      err.msg);
out:
    for (size_t i = 0; texts && i < n; i++) free(texts[i]);
    free(texts);
    free(msgs);
    return r;
}

srv_reply srv_prepare_job(srv *s, srv_api api, const json_t *body, const char *prompt, bool chat,
                          const char *stop_key, srv_job **out)
{
    char msg[MSG_CAP] = "";
    *out = NULL;
    sl_sampling_params sp = s->sp;
    if (!req_sampling(body, &sp, msg, sizeof msg)) return srv_error(api, 400, "%s", msg);
    sl_err err = {0};
    int32_t *ids = NULL;
    unsigned flags = SL_TOKENIZE_PARSE_SPECIAL | (sl_model_add_bos(s->m) ? SL_TOKENIZE_ADD_BOS : 0u);
    int n = gen_tokenize(s->m, prompt, strlen(prompt), flags, &ids, &err);
    if (n < 0) return srv_error(api, 400, "cannot tokenize the prompt: %s", err.msg);
    if (n == 0) {
        free(ids);
        return srv_error(api, 400, "the prompt is empty");
    }
    srv_job *j = srv_job_new(ids, n);
    if (!j) {
        free(ids);
        return srv_error(api, 500, "out of memory");
    }
    j->chat = chat;
    j->sp = sp;
    bool truncate = false;
    if (!req_limits(body, j, s->n_predict, stop_key, msg, sizeof msg) ||
        !req_bool(body, "truncate", &truncate, msg, sizeof msg)) {
        srv_job_unref(j);
        return srv_error(api, 400, "%s", msg);
    }
    if (n > s->n_ctx && !truncate) {
        srv_job_unref(j);
        return srv_error(api, 400, "the prompt has %d tokens but the context of a slot holds %d "
                         "(send \"truncate\": true to keep its last tokens)", n, s->n_ctx);
    }
    if (n > s->n_ctx) {
        /* as `sluice run --truncate`: BOS (if the prompt starts with it) and
         * the last tokens, leaving min(max tokens, half the context) free */
        int room = j->max_tokens < 0 || j->max_tokens > s->n_ctx / 2 ? s->n_ctx / 2 : j->max_tokens;
        int keep = s->n_ctx - room > 0 ? s->n_ctx - room : 1;
        int32_t bos = sl_model_token_bos(s->m);
        if ((flags & SL_TOKENIZE_ADD_BOS) && ids[0] == bos && keep >= 2)
            memmove(ids + 1, ids + n - (keep - 1), (size_t)(keep - 1) * sizeof *ids);
        else
            memmove(ids, ids + n - keep, (size_t)keep * sizeof *ids);
        j->n_ids = keep;
        j->truncated_from = n;
    }
    *out = j;
    return (srv_reply){0, NULL, NULL};
}
