/* cmd_serve.c - `sluice serve`: an OpenAI-compatible HTTP server on one
 * loaded model (server.h has the map of its files).
 *
 * Flags follow llama-server's names where they exist (--host, --port,
 * -np/--parallel, -c per slot, --api-key, -a/--alias) plus the model,
 * memory and sampling flags of `run` (the sampling ones are the defaults
 * of requests that do not say). Loads the model, plans memory for every
 * slot's context, starts the slots and the HTTP daemon, prints one line
 * saying where it listens, the model and the memory plan, and serves until
 * SIGINT or SIGTERM (Windows: Ctrl-C; util/stop_signal.h). The daemon
 * starts before the model loads and answers 503 until everything is ready
 * (srv.ready). */
#include <libgen.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../args.h"
#include "../commands.h"
#include "../gen.h"
#include "server.h"
#include "server_ollama.h"

#define CMD "serve"
#define MIB (1024.0 * 1024.0)

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice serve -m MODEL.gguf [options]\n"
            "\n"
            "Serves the model over HTTP: POST /v1/chat/completions, /v1/completions (OpenAI\n"
            "style, streaming with stream: true), /v1/messages (Anthropic), Ollama's\n"
            "/api/chat and /api/generate, /tokenize, /detokenize; GET /v1/models, /health,\n"
            "/metrics (Prometheus), /slots, /api/tags; a chat page with live telemetry at /\n"
            "(its plots read GET /api/events). Stops on SIGINT or SIGTERM. A request goes\n"
            "to the idle slot holding the longest prefix of its prompt (docs/server.md).\n"
            "\n"
            "      --host ADDR         numeric address to listen on (default 127.0.0.1; also\n"
            "                          0.0.0.0, ::1, ::, localhost; no name lookups); loopback\n"
            "                          refuses requests whose Host is not a loopback name\n"
            "      --port N            TCP port (default 8080; 0: any free port, printed)\n"
            "  -np, --parallel N       slots: requests generated at the same time (default 1)\n"
            "      --batch-step N      tokens per batched step when several slots are busy:\n"
            "                          their decode tokens and chunks of new prompts run as\n"
            "                          one forward pass (default 32 + slots; 0: each slot\n"
            "                          evaluates on its own)\n"
            "      --max-queue N       requests that may wait for a slot; more get 503\n"
            "                          (default 16)\n"
            "      --api-key KEY       every request needs 'Authorization: Bearer KEY'\n"
            "  -a, --alias NAME        the model's name in /v1/models and replies (default:\n"
            "                          the file name)\n"
            "      --max-body BYTES    largest request body (default 8 MiB); more gets 413\n"
            "      --timeout N         close a connection that sends nothing, or does not read\n"
            "                          its reply, for N seconds, or whose request headers take\n"
            "                          longer than that (default 30; 0: never); time spent\n"
            "                          waiting for generation does not count\n"
            "      --max-connections N  open connections at once, each a thread (default\n"
            "                          1024); more wait in the listen queue\n"
            "      --max-connections-per-ip N  open connections from one client address\n"
            "                          (default 256; 0: no cap); behind a reverse proxy every\n"
            "                          client has the proxy's address: set it to 0 there\n"
            "      --cors ORIGIN       let pages of ORIGIN (e.g. http://localhost:3000) call the\n"
            "                          server from a browser (default: no CORS headers)\n"
            "      --chat-template N   chat format instead of the detected one\n"
            "      --no-think          Qwen3: close an empty <think> block in the prompt\n"
            "      --reasoning LEVEL   gpt-oss (harmony): default reasoning effort, low,\n"
            "                          medium (default) or high; requests may set\n"
            "                          \"reasoning_effort\"\n"
            "      --cache-ram MB      keep evaluated prompt states in memory for every slot:\n"
            "                          each first turn (e.g. the system prompt) and each\n"
            "                          slot's last prompt and reply; a request starts from the\n"
            "                          longest prefix kept, whichever slot takes it (default:\n"
            "                          as much as the slots' own context state, within the\n"
            "                          memory budget, taken from the expert cache; 0: off)\n"
            "      --prompt-cache DIR  save evaluated prompts (each first turn, e.g. the system\n"
            "                          prompt, and each whole prompt) in DIR, keyed by the model\n"
            "                          and the tokens, and start later requests, also after a\n"
            "                          restart, from the longest saved prefix\n"
            "      --slot-save-path DIR  POST /slots/ID?action=save|restore {\"filename\": F}\n"
            "                          writes / reads a slot's state as DIR/F\n"
            "  -c applies to each slot; -n is the default max_tokens (default: no limit)\n");
    gen_opts_usage(f, -1);
    fprintf(f, "  -h, --help              this text\n");
}

int cmd_serve(int argc, char **argv)
{
    gen_opts o;
    gen_opts_init(&o, -1);
    const char *host = "127.0.0.1", *api_key = NULL, *alias = NULL, *tmpl = NULL, *cors = NULL;
    const char *pcache_dir = NULL, *slot_dir = NULL;
    long port = 8080, np = 1, max_queue = 16, max_body = 8L << 20, step = -1;
    long cache_ram = -1; /* --cache-ram MiB; -1: planned with the memory budget */
    long timeout_s = 30, max_conns = 1024, max_conns_ip = 256;
    bool no_think = false;
    const char *reasoning = NULL; /* --reasoning: harmony's default effort */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = gen_opts_parse(&o, CMD, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--host")) {
            if (!(host = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--port")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 0, 65535, &port))
                return 2;
        } else if (!strcmp(a, "-np") || !strcmp(a, "--parallel")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 1, 64, &np))
                return 2;
        } else if (!strcmp(a, "--batch-step")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 0, 4096, &step))
                return 2;
        } else if (!strcmp(a, "--max-queue")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 0, 4096, &max_queue))
                return 2;
        } else if (!strcmp(a, "--max-body")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) ||
                !arg_int(CMD, a, v, 1024, 1L << 30, &max_body))
                return 2;
        } else if (!strcmp(a, "--timeout")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 0, 86400, &timeout_s))
                return 2;
        } else if (!strcmp(a, "--max-connections")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) ||
                !arg_int(CMD, a, v, 4, 1L << 16, &max_conns))
                return 2;
        } else if (!strcmp(a, "--max-connections-per-ip")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) ||
                !arg_int(CMD, a, v, 0, 1L << 16, &max_conns_ip))
                return 2;
        } else if (!strcmp(a, "--api-key")) {
            if (!(api_key = arg_value(CMD, argc, argv, &i))) return 2;
            if (!api_key[0]) {
                fprintf(stderr, "sluice serve: --api-key needs a non-empty key\n");
                return 2;
            }
        } else if (!strcmp(a, "-a") || !strcmp(a, "--alias")) {
            if (!(alias = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--cors")) {
            if (!(cors = arg_value(CMD, argc, argv, &i))) return 2;
            if (!cors[0] || strpbrk(cors, "\r\n")) {
                fprintf(stderr, "sluice serve: --cors needs an origin such as http://localhost:3000\n");
                return 2;
            }
        } else if (!strcmp(a, "--chat-template")) {
            if (!(tmpl = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--no-think")) {
            no_think = true;
        } else if (!strcmp(a, "--reasoning")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "sluice serve: --reasoning needs low, medium or high\n");
                return 1;
            }
            reasoning = argv[++i];
        } else if (!strcmp(a, "--cache-ram")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) ||
                !arg_int(CMD, a, v, 0, 1L << 24, &cache_ram))
                return 2;
        } else if (!strcmp(a, "--prompt-cache")) {
            if (!(pcache_dir = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--slot-save-path")) {
            if (!(slot_dir = arg_value(CMD, argc, argv, &i))) return 2;
        } else {
            fprintf(stderr, "sluice serve: unknown option '%s' (see sluice serve --help)\n", a);
            return 2;
        }
    }
    if (!gen_opts_have_model(&o, CMD)) return 2;
    if (o.draft_model) {
        if (o.spec_type != SL_GEN_DRAFT_NONE) {
            fprintf(stderr, "sluice serve: -md (a draft model) and --spec-type choose the "
                    "drafter twice: give one\n");
            return 2;
        }
        o.spec_type = SL_GEN_DRAFT_MODEL;
    }

    /* the stop requests (SIGINT, SIGTERM; Windows: Ctrl-C) are waited for
     * by this thread only, before any other thread starts */
    sl_stop_signal_hold();

    srv s;
    memset(&s, 0, sizeof s);
    s.api_key = api_key;
    s.cors_origin = cors;
    s.max_body = (size_t)max_body;
    s.sp = o.sp;
    s.n_predict = o.n_predict;
    s.created = (long)time(NULL);
    char *base_copy = strdup(o.model);
    s.model_name = alias ? alias : (base_copy ? basename(base_copy) : o.model);

    int rc = 1;
    sl_err err = {0};
    if (slot_dir) {
        struct stat sd;
        if (stat(slot_dir, &sd) != 0 || !S_ISDIR(sd.st_mode)) {
            fprintf(stderr, "sluice serve: --slot-save-path '%s' is not a directory\n", slot_dir);
            goto done;
        }
        s.slot_dir = slot_dir;
    }
    /* listen first: while the model loads every request gets a 503 (as
     * llama-server answers), not a refused connection */
    int bound = 0;
    const srv_http_limits lim = {(unsigned)max_conns, (unsigned)max_conns_ip, (unsigned)timeout_s};
    if (srv_http_start(&s, host, (int)port, &lim, &bound)) goto done;
    const bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "sluice serve: loading %s; http://%s%s%s:%d answers 503 until it is ready\n",
            o.model, v6 ? "[" : "", host, v6 ? "]" : "", bound);
    fflush(stderr);
    model_flags mf = o.mf;
    /* the plan reserves every slot's context */
    mf.params.n_ctx_hint = (o.n_ctx > 0 ? o.n_ctx : 4096) * (int)np;
    /* the prompt cache in memory is planned beside the slots */
    if (cache_ram > 0) mf.params.host_cache_bytes = (uint64_t)cache_ram << 20;
    else if (cache_ram < 0) mf.params.host_cache_seqs = (int)np;
    if (o.spec_type != SL_GEN_DRAFT_NONE && mf.params.n_logits_hint < o.draft_max + 1)
        mf.params.n_logits_hint = o.draft_max + 1; /* the rows a verify step keeps */
    /* the MTP block or the draft model, and a session of it for each slot
     * (a file that cannot draft is refused when the drafters are made) */
    if ((o.spec_type == SL_GEN_DRAFT_MTP || o.draft_model) &&
        sl_draft_plan_bytes(o.model, o.draft_model, o.n_ctx > 0 ? o.n_ctx : 4096, o.n_batch,
                            (int)np, mf.params.cache_type_k, mf.params.cache_type_v,
                            &mf.params.drafter_bytes, &err))
        mf.params.drafter_bytes = 0;
    s.m = model_flags_load(&mf, CMD, o.model);
    if (!s.m) goto done;
    if (sl_model_n_tokens(s.m) == 0) {
        fprintf(stderr, "sluice serve: '%s' has no tokenizer (tokenizer.ggml.* metadata)\n",
                o.model);
        goto done;
    }
    if (sl_chat_create(&s.chat, s.m, tmpl, !no_think, &err)) {
        fprintf(stderr, "sluice serve: %s\n", err.msg);
        goto done;
    }
    if (sl_chat_warning(s.chat)) fprintf(stderr, "sluice serve: warning: %s\n", sl_chat_warning(s.chat));
    if (reasoning && sl_chat_set_effort(s.chat, reasoning, &err)) {
        fprintf(stderr, "sluice serve: %s\n", err.msg);
        goto done;
    }
    s.thinking = !no_think;
    s.harmony = sl_chat_family_of(s.chat) == SL_CHAT_HARMONY;
    s.model_facts = srv_ollama_facts(s.m, o.model); /* NULL: /api/show says less */
    int ctx = o.n_ctx > 0 ? o.n_ctx : sl_model_n_ctx_train(s.m);
    if (o.n_ctx <= 0 && ctx > 4096) ctx = 4096;
    if (ctx < 1) ctx = 1;
    /* a prompt cut as llama.cpp cuts it where that decides the bits */
    const int n_batch = sl_model_exact_batch(s.m, o.n_batch < ctx ? o.n_batch : ctx);
    if (step < 0) step = 32 + np;
    sl_model_params dp = mf.params; /* the drafters': no prompt cache of their own */
    dp.host_cache_bytes = 0;
    dp.host_cache_seqs = 0;
    const srv_draft draft = {o.spec_type, o.draft_max,   o.draft_min, o.spec_ngram,
                             o.draft_always, o.draft_model, &dp};
    if (srv_pool_start(&s.pool, s.m, s.chat, (int)np, ctx, n_batch, (int)max_queue,
                       (int)step, &draft))
        goto done;
    s.n_ctx = sl_session_n_ctx(s.pool.slots[0].g.s);
    sl_stream_stats st;
    sl_model_stream_stats(s.m, &st);
    if (st.host_cache_bytes) {
        srv_ramcache_init(&s.ram, st.host_cache_bytes);
        s.pool.ram = &s.ram;
        srv_ramcache_describe(s.m, n_batch);
    }
    if (pcache_dir) {
        if (srv_pcache_open(&s.pcache, pcache_dir, o.model)) goto done;
        s.pool.pcache = &s.pcache;
    }
    __atomic_store_n(&s.ready, 1, __ATOMIC_RELEASE);

    fprintf(stderr, "sluice serve: listening on http://%s%s%s:%d (model %s: %s, chat template "
            "%s, %ld slot%s x %d tokens); memory: budget %.0f MiB, dense %.0f MiB, KV and scratch "
            "%.0f MiB, prompt cache %.0f MiB, drafter %.0f MiB, experts %.0f MiB %s",
            v6 ? "[" : "", host, v6 ? "]" : "", bound, s.model_name, sl_model_arch_name(s.m),
            sl_chat_name(s.chat), np, np == 1 ? "" : "s", s.n_ctx, st.budget_bytes / MIB,
            st.dense_bytes / MIB, st.reserved_bytes / MIB, st.host_cache_bytes / MIB,
            st.drafter_bytes / MIB, st.expert_bytes / MIB, st.streaming ? "streamed" : "resident");
    if (st.streaming)
        fprintf(stderr, " (cache %.0f MiB, %llu experts; I/O %s)", st.cache_bytes / MIB,
                (unsigned long long)st.n_slots, st.io_mode);
    fprintf(stderr, "\n");
    fflush(stderr);

    fprintf(stderr, "sluice serve: %s: stopping\n", sl_stop_signal_wait());
    rc = 0;
done:
    srv_pool_stop(&s.pool);   /* running and queued jobs end; connections can finish */
    srv_http_stop(&s);
    srv_pool_free(&s.pool);
    srv_pcache_close(&s.pcache);
    if (s.ram.budget) srv_ramcache_free(&s.ram);
    sl_chat_free(s.chat);
    json_decref(s.model_facts);
    sl_model_free(s.m);
    free(base_copy);
    return rc;
}
