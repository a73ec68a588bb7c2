/* server_req.c - see server_req.h. */
#include "server_req.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *req_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* The value of key, NULL when absent or null. */
static const json_t *get(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v) ? v : NULL;
}

bool req_int(const json_t *o, const char *key, long lo, long hi, long *out, char *msg,
             size_t cap)
{
    const json_t *v = get(o, key);
    if (!v) return true;
    double d;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x >= lo && x <= hi) {
            *out = (long)x;
            return true;
        }
        snprintf(msg, cap, "'%s' must be an integer from %ld to %ld, got %lld", key, lo, hi,
                 (long long)x);
        return false;
    }
    d = json_is_real(v) ? json_real_value(v) : 0.5;
    if (json_is_real(v) && d == floor(d) && d >= (double)lo && d <= (double)hi) {
        *out = (long)d;
        return true;
    }
    snprintf(msg, cap, "'%s' must be an integer from %ld to %ld, got %s", key, lo, hi,
             req_type_name(v));
    return false;
}

bool req_num(const json_t *o, const char *key, double lo, double hi, double *out, char *msg,
             size_t cap)
{
    const json_t *v = get(o, key);
    if (!v) return true;
    if (json_is_number(v)) {
        double d = json_number_value(v);
        if (d >= lo && d <= hi) {
            *out = d;
            return true;
        }
        snprintf(msg, cap, "'%s' must be a number from %g to %g, got %g", key, lo, hi, d);
        return false;
    }
    snprintf(msg, cap, "'%s' must be a number from %g to %g, got %s", key, lo, hi,
             req_type_name(v));
    return false;
}

bool req_bool(const json_t *o, const char *key, bool *out, char *msg, size_t cap)
{
    const json_t *v = get(o, key);
    if (!v) return true;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    snprintf(msg, cap, "'%s' must be true or false, got %s", key, req_type_name(v));
    return false;
}

bool req_str(const json_t *o, const char *key, const char **out, size_t *len, char *msg,
             size_t cap)
{
    const json_t *v = get(o, key);
    if (!v) return true;
    if (json_is_string(v)) {
        *out = json_string_value(v);
        *len = json_string_length(v);
        return true;
    }
    snprintf(msg, cap, "'%s' must be a string, got %s", key, req_type_name(v));
    return false;
}

bool req_sampling(const json_t *o, sl_sampling_params *sp, char *msg, size_t cap)
{
    double d;
    long l;
    d = sp->temp;
    if (!req_num(o, "temperature", 0, 100, &d, msg, cap)) return false;
    sp->temp = (float)d;
    d = sp->top_p;
    if (!req_num(o, "top_p", 0, 1, &d, msg, cap)) return false;
    if (d <= 0) {
        snprintf(msg, cap, "'top_p' must be above 0 (1 turns it off), got %g", d);
        return false;
    }
    sp->top_p = (float)d;
    d = sp->min_p;
    if (!req_num(o, "min_p", 0, 1, &d, msg, cap)) return false;
    sp->min_p = (float)d;
    l = sp->top_k;
    if (!req_int(o, "top_k", -1, 1 << 30, &l, msg, cap)) return false; /* -1, 0: off */
    sp->top_k = (int32_t)(l < 0 ? 0 : l);
    d = sp->presence_penalty;
    if (!req_num(o, "presence_penalty", -2, 2, &d, msg, cap)) return false;
    sp->presence_penalty = (float)d;
    d = sp->frequency_penalty;
    if (!req_num(o, "frequency_penalty", -2, 2, &d, msg, cap)) return false;
    sp->frequency_penalty = (float)d;
    d = sp->repeat_penalty;
    if (!req_num(o, "repeat_penalty", 0, 100, &d, msg, cap)) return false;
    if (d <= 0) {
        snprintf(msg, cap, "'repeat_penalty' must be above 0 (1 turns it off), got %g", d);
        return false;
    }
    sp->repeat_penalty = (float)d;
    l = sp->penalty_last_n;
    if (!req_int(o, "repeat_last_n", -1, 1 << 24, &l, msg, cap)) return false;
    sp->penalty_last_n = (int32_t)l;
    const json_t *seed = get(o, "seed");
    /* -1: the server's seed (llama-server's and SillyTavern's "random") */
    if (seed && !(json_is_integer(seed) && json_integer_value(seed) == -1)) {
        if (!json_is_integer(seed) || json_integer_value(seed) < 0) {
            snprintf(msg, cap, "'seed' must be a whole number >= 0 (or -1: the server's), got %s",
                     json_is_integer(seed) ? "a negative one" : req_type_name(seed));
            return false;
        }
        sp->seed = (uint64_t)json_integer_value(seed);
    }
    return true;
}

static bool add_stop(srv_job *j, const char *key, const json_t *v, char *msg, size_t cap)
{
    if (!json_is_string(v)) {
        snprintf(msg, cap, "'%s' must be a string or an array of strings, got %s", key,
                 req_type_name(v));
        return false;
    }
    size_t n = json_string_length(v);
    if (n == 0 || n > SRV_MAX_STOP_LEN || memchr(json_string_value(v), 0, n)) {
        snprintf(msg, cap, "each '%s' text must have 1 to %d bytes, got %zu", key,
                 SRV_MAX_STOP_LEN, n);
        return false;
    }
    if (j->n_stops == SRV_MAX_STOPS) {
        snprintf(msg, cap, "'%s' holds at most %d texts", key, SRV_MAX_STOPS);
        return false;
    }
    memcpy(j->stops[j->n_stops++], json_string_value(v), n + 1);
    return true;
}

bool req_limits(const json_t *o, srv_job *j, int def_max, const char *stop_key, char *msg,
                size_t cap)
{
    long l = def_max;
    /* -1: no limit (llama-server's n_predict; LM Studio-style clients send
     * max_tokens -1 too) */
    if (!req_int(o, "n_predict", -1, 1 << 30, &l, msg, cap) ||
        !req_int(o, "max_tokens", -1, 1 << 30, &l, msg, cap) ||
        !req_int(o, "max_completion_tokens", -1, 1 << 30, &l, msg, cap))
        return false;
    j->max_tokens = (int)l;
    if (!req_bool(o, "ignore_eos", &j->ignore_eos, msg, cap)) return false;
    const json_t *st = get(o, stop_key);
    if (st && json_is_array(st)) {
        size_t i;
        const json_t *e;
        json_array_foreach(st, i, e)
            if (!add_stop(j, stop_key, e, msg, cap)) return false;
    } else if (st && !add_stop(j, stop_key, st, msg, cap)) {
        return false;
    }
    return true;
}

/* Whether v is absent, null, or an empty object or array. */
static bool empty(const json_t *v)
{
    return !v || json_is_null(v) || (json_is_object(v) && json_object_size(v) == 0) ||
           (json_is_array(v) && json_array_size(v) == 0);
}

bool req_refuse_unsupported(const json_t *o, bool chat, char *msg, size_t cap)
{
    const json_t *v;
    long n = 1;
    if (!req_int(o, "n", 1, 1 << 20, &n, msg, cap)) return false;
    if (n != 1) {
        snprintf(msg, cap, "'n' is %ld: this server answers one choice per request (send %ld "
                 "requests, each with its own seed)", n, n);
        return false;
    }
    v = get(o, "response_format");
    if (v) {
        const json_t *ty = json_is_object(v) ? json_object_get(v, "type") : NULL;
        if (!json_is_string(ty)) {
            snprintf(msg, cap, "'response_format' must be an object with a string 'type'");
            return false;
        }
        if (strcmp(json_string_value(ty), "text")) {
            snprintf(msg, cap, "'response_format' of type '%.40s' is not supported: this server "
                     "has no constrained (JSON or schema) sampling; leave it out or use "
                     "{\"type\": \"text\"}", json_string_value(ty));
            return false;
        }
    }
    static const char *const constrain[] = {"grammar", "json_schema"};
    for (size_t i = 0; i < sizeof constrain / sizeof constrain[0]; i++) {
        v = get(o, constrain[i]);
        if (v && !empty(v) && !(json_is_string(v) && json_string_length(v) == 0)) {
            snprintf(msg, cap, "'%s' is not supported: this server has no constrained sampling",
                     constrain[i]);
            return false;
        }
    }
    v = get(o, "logit_bias");
    if (v && !json_is_object(v) && !json_is_array(v)) {
        snprintf(msg, cap, "'logit_bias' must be an object of token ids and biases, got %s",
                 req_type_name(v));
        return false;
    }
    if (!empty(v)) {
        snprintf(msg, cap, "a non-empty 'logit_bias' is not supported by this server (an empty "
                 "one is accepted)");
        return false;
    }
    if (!empty(get(o, "functions")) || get(o, "function_call")) {
        snprintf(msg, cap, "'functions' and 'function_call' (OpenAI's deprecated form) are not "
                 "supported: send 'tools' and 'tool_choice'");
        return false;
    }
    v = get(o, "modalities");
    if (v) {
        size_t i;
        const json_t *e;
        bool bad = !json_is_array(v);
        if (!bad)
            json_array_foreach(v, i, e) bad |= !json_is_string(e) || strcmp(json_string_value(e), "text");
        if (bad) {
            snprintf(msg, cap, "'modalities' may only be [\"text\"]: this server answers text");
            return false;
        }
    }
    if (chat) return true;
    long best_of = 1;
    bool echo = false;
    if (!req_int(o, "best_of", 1, 1 << 20, &best_of, msg, cap) ||
        !req_bool(o, "echo", &echo, msg, cap))
        return false;
    if (best_of != 1 || echo) {
        snprintf(msg, cap, "'%s' is not supported (one choice per request, the prompt is not "
                 "echoed)", best_of != 1 ? "best_of" : "echo");
        return false;
    }
    v = get(o, "suffix");
    if (v && !(json_is_string(v) && json_string_length(v) == 0)) {
        snprintf(msg, cap, "'suffix' (fill-in-the-middle) is not supported: put the model's own "
                 "FIM tokens in 'prompt'");
        return false;
    }
    return true;
}
