/* fuzz_http.c - libFuzzer target on `sluice serve`'s request bodies: every
 * input is one request answered by srv_answer_request (the HTTP layer's
 * path once the headers passed: routing, strict JSON, the handlers, their
 * field checks, chat templates, tokenizing and, for generating endpoints,
 * generation on a one-slot pool).
 *
 * The first input byte picks the method and path (the endpoints, a path
 * with doubled slashes, an unknown one, a GET of a POST endpoint), the
 * second the Content-Type; the rest is the body. A small model (qwen3moe
 * tiny-k, two layers) is written to a temporary file and loaded once; each
 * slot holds 96 tokens, so no request generates for long. A streamed
 * reply is read to its end and released, as the HTTP layer does.
 *
 * The oracle: the sanitizers (no memory error, leak or undefined
 * behaviour) and the reply itself: a status in 200..599, with a JSON body
 * or a job, never both, and an error status with an error object (the
 * Ollama endpoints': an error string). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../app/gen.h"
#include "../../app/server/server.h"
#include "sluice.h"
#include "synth/synth.h"

#define FUZZ_CHECK(c)                                                                  \
    do {                                                                               \
        if (!(c)) {                                                                    \
            fprintf(stderr, "fuzz_http: check failed at line %d: %s\n", __LINE__, #c); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static srv g_srv;

static const struct {
    const char *method, *url, *action;
} requests[] = {
    {"POST", "/v1/chat/completions", NULL},
    {"POST", "/v1/completions", NULL},
    {"POST", "/v1/messages", NULL},
    {"POST", "/v1/messages/count_tokens", NULL},
    {"POST", "/completion", NULL},
    {"POST", "/tokenize", NULL},
    {"POST", "/detokenize", NULL},
    {"POST", "/apply-template", NULL},
    {"POST", "/slots/0", "save"},
    {"POST", "/slots/x", "restore"},
    {"POST", "//v1//chat/completions/", NULL},
    {"GET", "/v1/models/m.gguf", NULL},
    {"GET", "/props", NULL},
    {"GET", "/slots", NULL},
    {"GET", "/v1/chat/completions", NULL},
    {"POST", "/nowhere", NULL},
    {"POST", "/api/chat", NULL},
    {"POST", "/api/generate", NULL},
    {"POST", "/api/show", NULL},
    {"GET", "/api/tags", NULL},
    {"DELETE", "/api/delete", NULL},
};

static const char *const ctypes[] = {NULL, "application/json", "text/plain",
                                     "application/vnd.api+json", "text/html"};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[] = "/tmp/fuzz_http_model_XXXXXX";
    int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0);
    close(fd);
    sl_err err = {0};
    sl_synth_config c;
    FUZZ_CHECK(!sl_synth_config_init(&c, "qwen3moe", "tiny-k", &err));
    c.n_layer = 2;
    c.seed = 3;
    c.threads = 1;
    FUZZ_CHECK(!sl_synth_config_validate(&c, &err));
    sl_synth_stats st;
    FUZZ_CHECK(!sl_synth_write(&c, path, NULL, NULL, &st, &err));
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 1;
    if (sl_model_load(&g_srv.m, path, &mp, &err)) {
        fprintf(stderr, "fuzz_http: %s\n", err.msg);
        abort();
    }
    unlink(path);
    FUZZ_CHECK(!sl_chat_create(&g_srv.chat, g_srv.m, NULL, true, &err));
    g_srv.thinking = true;
    g_srv.harmony = sl_chat_family_of(g_srv.chat) == SL_CHAT_HARMONY;
    g_srv.model_name = "m.gguf";
    g_srv.max_body = 1 << 20;
    g_srv.sp = sl_sampling_default_params();
    g_srv.n_predict = 8;
    const srv_draft no_draft = {SL_GEN_DRAFT_NONE, 0, 0, 0};
    FUZZ_CHECK(!srv_pool_start(&g_srv.pool, g_srv.m, g_srv.chat, 1, 96, 96, SL_KV_F16, 4, 33,
                               &no_draft));
    g_srv.n_ctx = sl_session_n_ctx(g_srv.pool.slots[0].g.s);
    __atomic_store_n(&g_srv.ready, 1, __ATOMIC_RELEASE);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t n_req = sizeof requests / sizeof requests[0];
    size_t which = data[0] % n_req;
    const char *ctype = ctypes[data[1] % (sizeof ctypes / sizeof ctypes[0])];
    srv_reply r = srv_answer_request(&g_srv, requests[which].method, requests[which].url,
                                     requests[which].action, ctype, (const char *)data + 2,
                                     size - 2);
    FUZZ_CHECK(r.status >= 200 && r.status <= 599);
    FUZZ_CHECK(!(r.body && r.job));
    if (r.job) {
        char buf[4096];
        while (srv_job_read(r.job, buf, sizeof buf) > 0) {
        }
        srv_job_cancel(r.job);
        srv_job_unref(r.job);
        return 0;
    }
    FUZZ_CHECK(r.body);
    if (r.status >= 400) {
        /* OpenAI's and Anthropic's {"error": {"message"}}, Ollama's {"error": "..."} */
        json_t *e = json_object_get(r.body, "error");
        FUZZ_CHECK(e && (json_is_string(json_object_get(e, "message")) ||
                         (json_is_string(e) && !strncmp(requests[which].url, "/api/", 5))));
    }
    json_decref(r.body);
    return 0;
}
