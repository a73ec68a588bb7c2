/* gen.c - see gen.h. */
#include "gen.h"

#include "draft_figures.h"
#include "gen_talk.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "engine/session.h"
#include "ops/ops.h"
#include "util/file.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "outputs.h"
#include "util/status.h"
#include "util/timer.h"

void gen_opts_init(gen_opts *o, int n_predict)
{
    memset(o, 0, sizeof *o);
    model_flags_init(&o->mf);
    o->n_batch = 512;
    o->n_predict = n_predict;
    o->sp = sl_sampling_default_params();
    o->draft_max = 8;
    o->draft_min = 1;
    o->spec_ngram = 3;
}

void gen_opts_usage(FILE *f, int default_n_predict)
{
    sl_sampling_params d = sl_sampling_default_params();
    fprintf(f,
            "  -m, --model FILE        model (GGUF) to run\n"
            "  -n, --n-predict N       tokens to generate (default %d; -1: until the end of\n"
            "                          generation or a full context)\n"
            "  -c, --ctx-size N        context (KV cache) size in tokens (default: the model's\n"
            "                          training context, at most 4096)\n"
            "  -b, --batch-size N      prompt micro-batch (also -ub): tokens evaluated\n"
            "                          together, each expert read once per batch (default 512)\n"
            "sampling (greedy when --temp is 0):\n"
            "      --temp T            temperature (default %.2f)\n"
            "      --top-k K           keep the K most likely tokens; 0: off (default %d)\n"
            "      --top-p P           nucleus: keep the smallest set of mass P; 1: off (default %.2f)\n"
            "      --min-p P           drop tokens below P x the top probability; 0: off (default %.2f)\n"
            "      --repeat-penalty R  divide the logits of recent tokens by R; 1: off (default %.2f)\n"
            "      --repeat-last-n N   tokens the penalties look back on; 0: none, -1: the\n"
            "                          whole context (default %d)\n"
            "      --presence-penalty P   subtract P from each recent token's logit (default 0)\n"
            "      --frequency-penalty P  subtract P per occurrence (default 0)\n"
            "  -s, --seed S            random seed: the same seed gives the same text (default %llu)\n"
            "      --ignore-eos        do not stop at end-of-generation tokens\n"
            "speculative decoding (the same text; the step times and the share of guesses\n"
            "that hold are measured as the reply goes, and guesses are verified only while\n"
            "that beats plain decoding; --stats or -v prints the figures):\n"
            "      --spec-type T       none (default) or ngram-simple: guess the next tokens\n"
            "                          by finding the context's last tokens earlier in the\n"
            "                          prompt or reply, and verify the guesses in one batch\n"
            "                          (any sampler: each token is still the model's own\n"
            "                          pick; models with recurrent layers draft nothing);\n"
            "                          draft-mtp: guess with the model's own MTP (nextn)\n"
            "                          block (glm4moe, deepseek2, glm-dsa files that carry one)\n"
            "  -md, --model-draft FILE guess with a smaller model of the same vocabulary\n"
            "      --draft-max N       tokens guessed at most a step, 1..%d (default 8)\n"
            "      --draft-min N       guess nothing when fewer are found (default 1)\n"
            "      --spec-ngram-size-n N  longest suffix looked up, 1..16 (default 3)\n"
            "      --draft-always      verify every guess, even while it does not pay\n"
            "      --spec-sampling     speculative sampling: draw each token with the guess\n"
            "                          for it first (kept with its probability, else a\n"
            "                          draw from the rest): the same distribution, and a\n"
            "                          seed repeats the text, but not the text without\n"
            "                          drafting; prompt lookup's guesses hold as often\n"
            "                          either way (greedy: no difference)\n"
            "  -v, --verbose           more statistics on stderr\n"
            "model, memory and streaming:\n",
            default_n_predict, (double)d.temp, (int)d.top_k, (double)d.top_p, (double)d.min_p,
            (double)d.repeat_penalty, (int)d.penalty_last_n, (unsigned long long)d.seed,
            SL_GEN_MAX_DRAFT);
    model_flags_help(f);
}

static bool is(const char *a, const char *s1, const char *s2)
{
    return !strcmp(a, s1) || (s2 && !strcmp(a, s2));
}

int gen_opts_parse(gen_opts *o, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    long l;
    double d;
#define VAL() \
    if (!(v = arg_value(cmd, argc, argv, i))) return -1
    const int shared = model_flags_parse(&o->mf, cmd, argc, argv, i);
    if (shared != 0) return shared;
    if (is(a, "-m", "--model")) {
        VAL();
        o->model = v;
    } else if (is(a, "-c", "--ctx-size")) {
        VAL();
        if (!arg_int(cmd, a, v, 1, 1 << 24, &l)) return -1;
        o->n_ctx = (int)l;
    } else if (is(a, "-b", "--batch-size") || is(a, "-ub", "--ubatch-size") || is(a, "--ubatch", NULL)) {
        VAL();
        if (!arg_int(cmd, a, v, 1, 1 << 16, &l)) return -1;
        o->n_batch = (int)l;
    } else if (is(a, "-n", "--n-predict")) {
        VAL();
        if (!arg_int(cmd, a, v, -1, 1 << 30, &l)) return -1;
        o->n_predict = (int)l;
    } else if (is(a, "--temp", NULL)) {
        VAL();
        if (!arg_float(cmd, a, v, 0, 100, &d)) return -1;
        o->sp.temp = (float)d;
    } else if (is(a, "--top-k", NULL)) {
        VAL();
        if (!arg_int(cmd, a, v, 0, 1 << 30, &l)) return -1;
        o->sp.top_k = (int32_t)l;
    } else if (is(a, "--top-p", NULL)) {
        VAL();
        if (!arg_float(cmd, a, v, 0, 1, &d)) return -1;
        if (d <= 0) {
            fprintf(stderr, "sluice %s: --top-p must be above 0 (1 turns it off), got '%s'\n",
                    cmd, v);
            return -1;
        }
        o->sp.top_p = (float)d;
    } else if (is(a, "--min-p", NULL)) {
        VAL();
        if (!arg_float(cmd, a, v, 0, 1, &d)) return -1;
        o->sp.min_p = (float)d;
    } else if (is(a, "--repeat-penalty", NULL)) {
        VAL();
        if (!arg_float(cmd, a, v, 0, 100, &d)) return -1;
        if (d <= 0) {
            fprintf(stderr, "sluice %s: --repeat-penalty must be above 0 (1 turns it off), "
                    "got '%s'\n", cmd, v);
            return -1;
        }
        o->sp.repeat_penalty = (float)d;
    } else if (is(a, "--repeat-last-n", NULL)) {
        VAL();
        if (!arg_int(cmd, a, v, -1, 1 << 24, &l)) return -1;
        o->sp.penalty_last_n = (int32_t)l;
    } else if (is(a, "--presence-penalty", NULL)) {
        VAL();
        if (!arg_float(cmd, a, v, -100, 100, &d)) return -1;
        o->sp.presence_penalty = (float)d;
    } else if (is(a, "--frequency-penalty", NULL)) {
        VAL();
        if (!arg_float(cmd, a, v, -100, 100, &d)) return -1;
        o->sp.frequency_penalty = (float)d;
    } else if (is(a, "--seed", "-s")) {
        VAL();
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (errno || end == v || *end || *v == '-') {
            fprintf(stderr, "sluice %s: --seed expects a whole number >= 0, got '%s'\n", cmd, v);
            return -1;
        }
        o->sp.seed = (uint64_t)s;
    } else if (is(a, "--spec-type", NULL)) {
        VAL();
        if (!strcmp(v, "none")) {
            o->spec_type = SL_GEN_DRAFT_NONE;
        } else if (!strcmp(v, "ngram-simple") || !strcmp(v, "ngram")) {
            o->spec_type = SL_GEN_DRAFT_NGRAM;
        } else if (!strcmp(v, "draft-mtp")) {
            o->spec_type = SL_GEN_DRAFT_MTP;
        } else {
            fprintf(stderr, "sluice %s: --spec-type expects none, ngram-simple or draft-mtp, "
                    "got '%s'\n", cmd, v);
            return -1;
        }
    } else if (is(a, "-md", "--model-draft")) {
        VAL();
        o->draft_model = v;
    } else if (is(a, "--draft-max", "--draft")) {
        VAL();
        if (!arg_int(cmd, a, v, 1, SL_GEN_MAX_DRAFT, &l)) return -1;
        o->draft_max = (int)l;
    } else if (is(a, "--draft-min", NULL)) {
        VAL();
        if (!arg_int(cmd, a, v, 0, SL_GEN_MAX_DRAFT, &l)) return -1;
        o->draft_min = (int)l;
    } else if (is(a, "--spec-ngram-size-n", NULL)) {
        VAL();
        if (!arg_int(cmd, a, v, 1, 16, &l)) return -1;
        o->spec_ngram = (int)l;
    } else if (is(a, "--draft-always", NULL)) {
        o->draft_always = true;
    } else if (is(a, "--spec-sampling", NULL)) {
        o->spec_sampling = true;
    } else if (is(a, "--ignore-eos", NULL)) {
        o->ignore_eos = true;
    } else if (is(a, "-v", "--verbose")) {
        o->verbose = true;
    } else {
        return 0;
    }
#undef VAL
    return 1;
}

bool gen_opts_have_model(const gen_opts *o, const char *cmd)
{
    if (o->model) return true;
    fprintf(stderr, "sluice %s: no model given (-m MODEL.gguf)\n", cmd);
    return false;
}

int talk_opts_parse(talk_opts *t, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--show-reasoning")) {
        t->show_reasoning = true;
        return 1;
    }
    const char **dst = !strcmp(a, "--reasoning") ? &t->reasoning
                       : !strcmp(a, "--prompt-cache") ? &t->cache
                                                      : NULL;
    if (!dst) return 0;
    return (*dst = arg_value(cmd, argc, argv, i)) ? 1 : -1;
}

int gen_open(gen_ctx *g, const gen_opts *o, const char *cmd)
{
    sl_err err = {0};
    memset(g, 0, sizeof *g);
    double t0 = sl_now_s();
    model_flags mf = o->mf;
    mf.params.n_ctx_hint = o->n_ctx;
    g->spec_type = o->spec_type;
    if (o->draft_model) {
        if (o->spec_type != SL_GEN_DRAFT_NONE) {
            fprintf(stderr, "sluice %s: -md (a draft model) and --spec-type choose the drafter "
                    "twice: give one\n", cmd);
            return 1;
        }
        g->spec_type = SL_GEN_DRAFT_MODEL;
    }
    g->draft_max = o->draft_max;
    g->draft_min = o->draft_min;
    g->spec_ngram = o->spec_ngram;
    g->draft_always = o->draft_always;
    g->spec_sampling = o->spec_sampling;
    if (o->spec_sampling && o->spec_type == SL_GEN_DRAFT_NONE) {
        fprintf(stderr, "sluice %s: --spec-sampling needs --spec-type\n", cmd);
        return 1;
    }
    const int logit_rows = g->spec_type != SL_GEN_DRAFT_NONE ? o->draft_max + 1 : 1;
    if (logit_rows > mf.params.n_logits_hint) mf.params.n_logits_hint = logit_rows;
    /* the MTP block or the draft model and its session, in the plan (a
     * file that cannot draft is refused when the drafter is made) */
    if ((g->spec_type == SL_GEN_DRAFT_MTP || g->spec_type == SL_GEN_DRAFT_MODEL) &&
        sl_draft_plan_bytes(o->model, o->draft_model, o->n_ctx > 0 ? o->n_ctx : 4096,
                            o->n_batch, 1, mf.params.cache_type_k, mf.params.cache_type_v,
                            &mf.params.drafter_bytes, &err))
        mf.params.drafter_bytes = 0;
    g->m = model_flags_load(&mf, cmd, o->model);
    if (!g->m) return 1;
    g->mf = &o->mf;
    g->load_s = sl_now_s() - t0;
    if (sl_model_n_tokens(g->m) == 0) {
        fprintf(stderr, "sluice %s: '%s' has no tokenizer (tokenizer.ggml.* metadata)\n", cmd,
                o->model);
        goto fail;
    }
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = o->n_ctx;
    int ctx = o->n_ctx > 0 ? o->n_ctx : sl_model_n_ctx_train(g->m);
    if (o->n_ctx <= 0 && ctx > 4096) ctx = 4096;
    if (ctx < 1) ctx = 1;
    /* a prompt cut as llama.cpp cuts it where that decides the bits */
    g->n_batch = sl_model_exact_batch(g->m, o->n_batch < ctx ? o->n_batch : ctx);
    sp.n_batch_max = g->n_batch > logit_rows ? g->n_batch : logit_rows;
    sp.n_logit_rows = logit_rows;
    if (sl_session_create(&g->s, g->m, &sp, &err)) {
        fprintf(stderr, "sluice %s: %s\n", cmd, err.msg);
        goto fail;
    }
    if (g->spec_type == SL_GEN_DRAFT_MTP || g->spec_type == SL_GEN_DRAFT_MODEL) {
        sl_model_params dp = mf.params;
        const int drc = g->spec_type == SL_GEN_DRAFT_MTP
                            ? sl_draft_mtp_create(&g->draft_src, g->s, &dp, &err)
                            : sl_draft_model_create(&g->draft_src, g->s, o->draft_model, &dp, &err);
        if (drc) {
            fprintf(stderr, "sluice %s: %s\n", cmd, err.msg);
            goto fail;
        }
    }
    sl_sampling_params smp = o->sp;
    if (smp.penalty_last_n < 0) smp.penalty_last_n = sl_session_n_ctx(g->s);
    if (sl_sampling_create(&g->smp, &smp, sl_model_n_vocab(g->m), &err)) {
        fprintf(stderr, "sluice %s: %s\n", cmd, err.msg);
        goto fail;
    }
    return 0;
fail:
    gen_close(g);
    return 1;
}

void gen_close(gen_ctx *g)
{
    sl_sampling_free(g->smp);
    sl_draft_src_free(g->draft_src);
    sl_session_free(g->s);
    sl_model_free(g->m);
    memset(g, 0, sizeof *g);
}

int gen_eval(gen_ctx *g, const int32_t *ids, int n, sl_err *err)
{
    for (int i = 0; i < n;) {
        const int want = n - i < g->n_batch ? n - i : g->n_batch;
        int rc = sl_session_eval(g->s, ids + i, want, err);
        for (int j = 0; rc == SL_OK && j < want; j++)
            rc = sl_sampling_accept(g->smp, ids[i + j], err);
        if (rc) return rc;
        i += want;
    }
    return SL_OK;
}

bool gen_logits_finite(sl_session *s)
{
    const float *l = sl_session_logits(s);
    return !l || sl_first_nonfinite(l, sl_model_n_vocab(s->m)) < 0;
}

/* Restores path into g's session and keeps the longest prefix shared with
 * ids[0..n) whose rows took the attention kernels this prompt gives them
 * (sl_session_set_prompt), that the session can return to and that leaves
 * logits to sample from. Returns the tokens kept (0: a cold start, the session
 * empty; *same: the file holds exactly ids). A file whose saved logits
 * are not finite is deleted. */
static int restore_prefix(gen_ctx *g, const char *cmd, const char *path, const int32_t *ids,
                          int n, bool *same)
{
    *same = false;
    if (access(path, F_OK) != 0) return 0; /* the first run: nothing saved yet */
    sl_err e = {0};
    int k = sl_session_load(g->s, path, NULL, 0, &e);
    int32_t *saved = k > 0 ? malloc((size_t)k * sizeof *saved) : NULL;
    if (k > 0 && saved) k = sl_session_load(g->s, path, saved, k, &e);
    if (k < 0) {
        fprintf(stderr, "sluice %s: warning: prompt cache: %s; evaluating the prompt from "
                "the start\n", cmd, e.msg);
        free(saved);
        sl_session_truncate(g->s, 0);
        return 0;
    }
    if (!gen_logits_finite(g->s)) {
        fprintf(stderr, "sluice %s: warning: prompt cache: '%s' holds non-finite logits (NaN "
                "or infinity): deleted; evaluating the prompt from the start\n", cmd, path);
        sl_file_remove(path);
        free(saved);
        sl_session_truncate(g->s, 0);
        return 0;
    }
    int common = 0;
    while (common < k && common < n && saved[common] == ids[common]) common++;
    free(saved);
    /* rows whose attention took another kernel than this prompt's rule
     * gives them (another prompt's last micro-batch, a reply's tokens, a
     * file that does not say) are evaluated again */
    const int agree = sl_session_set_prompt(g->s, n);
    int keep = common < agree ? common : agree;
    *same = k == n && keep == n;
    if (keep == n) {
        /* the whole prompt: its last token is evaluated again (the same
         * logits: batch splits are exact), so that poisoned K/V rows show
         * as non-finite values (gen_heal). A recurrent model cannot go back
         * there: it samples from the saved logits, if the file ends with
         * the prompt */
        keep = n - 1;
        if (keep > 0 && sl_session_truncate(g->s, keep) != SL_OK && k == n &&
            sl_session_logits(g->s))
            keep = n;
    }
    if (keep <= 0 || sl_session_truncate(g->s, keep) != SL_OK) keep = 0;
    if (keep == 0) sl_session_truncate(g->s, 0);
    return keep;
}

bool gen_heal(gen_ctx *g, int rc, int kept, const sl_err *err, sl_err *first)
{
    if (rc != SL_EFORMAT || kept <= 0) return false;
    *first = *err;
    sl_session_truncate(g->s, 0);
    sl_sampling_reset(g->smp);
    return true;
}

/* Records ids[0..n) in the sampler's history (tokens not evaluated here). */
static int accept_all(gen_ctx *g, const int32_t *ids, int n, sl_err *err)
{
    for (int i = 0; i < n; i++) {
        const int rc = sl_sampling_accept(g->smp, ids[i], err);
        if (rc) return rc;
    }
    return SL_OK;
}

int gen_eval_cached(gen_ctx *g, const char *cmd, const char *path, const int32_t *ids, int n,
                    int *n_reused, sl_err *err)
{
    *n_reused = 0;
    /* the reply's prompt: everything from position 0 (a chat's later turn
     * continues what the session holds, as llama.cpp's chat does) */
    const int before = sl_session_n_past(g->s);
    sl_session_set_prompt(g->s, before + n);
    if (!path || before != 0) return gen_eval(g, ids, n, err);
    sl_err e = {0};
    if (sl_session_save_check(path, &e)) { /* not a file the cache may use: one line */
        fprintf(stderr, "sluice %s: warning: prompt cache: %s; going on without the prompt "
                "cache\n", cmd, e.msg);
        return gen_eval(g, ids, n, err);
    }
    bool same; /* the file holds this prompt: nothing new to save */
    const int keep = restore_prefix(g, cmd, path, ids, n, &same);
    int rc = accept_all(g, ids, keep, err);
    if (rc) return rc;
    *n_reused = keep;
    if (keep == n) return SL_OK;
    rc = gen_eval(g, ids + keep, n - keep, err);
    sl_err first;
    if (gen_heal(g, rc, keep, err, &first)) {
        *n_reused = 0;
        rc = gen_eval(g, ids, n, err);
        if (rc) return rc;
        fprintf(stderr, "sluice %s: warning: prompt cache: the state restored from '%s' gave "
                "non-finite values (%s): deleted; the prompt was evaluated from the start\n",
                cmd, path, first.msg);
        sl_file_remove(path);
        same = false;
    }
    if (rc || same) return rc;
    if (sl_session_save(g->s, path, ids, n, &e))
        fprintf(stderr, "sluice %s: warning: prompt cache: cannot save the prompt: %s\n", cmd,
                e.msg);
    return SL_OK;
}

void gen_cache_reply_failed(const char *cmd, const char *path, int n_reused, int rc)
{
    if (!path || n_reused <= 0 || rc != SL_EFORMAT) return;
    fprintf(stderr, "sluice %s: warning: prompt cache: the reply after the state restored from "
            "'%s' met non-finite values: the file is deleted\n", cmd, path);
    sl_file_remove(path);
}

/* Writes an event's text to out or the harmony filter and flushes: 0, or
 * SL_EIO with err filled when writing failed (now or before). */
static int print_text(FILE *out, gen_harmony_out *h, const char *text, size_t len, sl_err *err)
{
    FILE *f = h ? h->dst : out;
    if (h) gen_harmony_feed(h, text, len);
    else if (len) fwrite(text, 1, len, f);
    errno = 0;
    if (fflush(f) == 0 && !ferror(f)) return SL_OK;
    /* a full disk or a closed stdout: no point generating more */
    return sl_err_set(err, SL_EIO, "cannot write the output (standard output): %s",
                      errno ? strerror(errno) : "an earlier write failed");
}

int gen_reply(gen_ctx *g, int max, const sl_chat *chat, bool ignore_eos,
              const char *const *stop_texts, volatile sig_atomic_t *interrupt, FILE *out,
              gen_harmony_out *harmony, gen_reply_stats *st, sl_err *err)
{
    double t0 = sl_now_s();
    st->n_gen = 0;
    st->stop = GEN_STOP_EOG;
    sl_gen_params gp = sl_gen_default_params();
    gp.sampler = g->smp;
    gp.max_tokens = max;
    gp.stop_texts = stop_texts;
    gp.chat = chat;
    gp.ignore_eog = ignore_eos;
    gp.detok_flags = g->detok_flags;
    gen_draft_params(g, &gp);
    gp.context = g->context;
    gp.n_context = g->n_context;
    memset(&st->draft, 0, sizeof st->draft);
    sl_gen *gen = NULL;
    int rc = sl_gen_create(&gen, g->s, &gp, err);
    if (rc) return rc;
    sl_gen_draft_stats_get(gen, &st->draft);
    if (st->draft.off && !g->draft_off_said) {
        fprintf(stderr, "sluice: drafting is off: %s\n", st->draft.off);
        g->draft_off_said = true;
    }
    if (g->mf) model_flags_progress(g->mf, g->m, 0, 0.0); /* the prompt's --stats-csv row */
    for (;;) {
        if (interrupt && *interrupt) sl_gen_cancel(gen);
        const int32_t *ids;
        const int n = sl_gen_pending(gen, &ids);
        if (n > 0) {
            if ((rc = sl_session_eval(g->s, ids, n, err))) break;
            sl_gen_evaluated(gen, n);
            if (g->mf) model_flags_progress(g->mf, g->m, st->n_gen, sl_now_s() - t0);
        }
        sl_gen_event ev;
        if ((rc = sl_gen_next(gen, &ev, err))) break;
        st->n_gen += ev.n_ids;
        const int wrc = print_text(out, harmony, ev.text, ev.len, err);
        if (ev.stop != SL_GEN_GOING) {
            st->stop = ev.stop == SL_GEN_LIMIT       ? GEN_STOP_LIMIT
                       : ev.stop == SL_GEN_CTX       ? GEN_STOP_CTX
                       : ev.stop == SL_GEN_CANCELLED ? GEN_STOP_INTERRUPT
                                                     : GEN_STOP_EOG;
            rc = wrc;
            break;
        }
        if ((rc = wrc)) break;
    }
    if (g->mf) model_flags_progress_end(g->mf);
    sl_gen_draft_stats_get(gen, &st->draft);
    if (harmony) {
        gen_harmony_finish(harmony);
        if (fflush(harmony->dst) != 0 && rc == SL_OK)
            rc = sl_err_set(err, SL_EIO, "cannot write the output (standard output): %s",
                            strerror(errno));
    }
    sl_gen_free(gen);
    st->seconds = sl_now_s() - t0;
    return rc;
}

void gen_draft_params(const gen_ctx *g, sl_gen_params *gp)
{
    gp->draft = g->spec_type;
    gp->draft_max = g->draft_max;
    gp->draft_min = g->draft_min;
    gp->draft_ngram = g->spec_ngram;
    gp->draft_src = g->draft_src;
    gp->draft_always = g->draft_always;
    gp->draft_sampling = g->spec_sampling;
}

void gen_draft_report(const gen_ctx *g, const gen_reply_stats *st)
{
    if (g->spec_type == SL_GEN_DRAFT_NONE) return;
    const sl_gen_draft_stats *d = &st->draft;
    if (d->off) {
        fprintf(stderr, "draft:     off (%s)\n", d->off);
        return;
    }
    draft_figures f;
    draft_figures_of(d, &f);
    fprintf(stderr, "draft:     %ld drafted, %ld accepted (%.1f %%), %ld verify steps "
            "(%.2f tokens each), %ld evaluations for %d tokens\n", d->drafted, d->accepted,
            100.0 * f.acceptance, d->verify_steps, f.tokens_per_verify, d->steps, st->n_gen);
    if (f.n_positions) {
        fprintf(stderr, "draft:     held by position:");
        for (int i = 0; i < f.n_positions; i++)
            fprintf(stderr, " %d:%.0f%%", i + 1, 100.0 * f.held_at[i]);
        fputc('\n', stderr);
    }
    fprintf(stderr, "draft:     plain step %.3f ms (%ld), verify step %.3f ms (%ld, %.2f tokens "
            "each)", 1e3 * f.plain_step_s, d->plain_timed, 1e3 * f.verify_step_s,
            d->verify_timed, f.verify_tokens);
    if (f.gain > 0) fprintf(stderr, ": %.2fx plain decoding", f.gain);
    fprintf(stderr, ", switched off %ld times, %ld probes\n", d->switched_off, d->probes);
}

char *gen_read_file(const char *cmd, const char *path, size_t *len)
{
    return outputs_read_text(cmd, path, len);
}

int gen_tokenize(const sl_model *m, const char *text, size_t len, unsigned flags,
                 int32_t **out, sl_err *err)
{
    /* a token covers at least one byte, plus BOS and a SentencePiece space
     * prefix: one call is enough unless the guess is wrong */
    size_t cap = len + 8;
    *out = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (cap > (size_t)1 << 31) cap = (size_t)1 << 31;
        int32_t *ids = malloc(cap * sizeof *ids);
        if (!ids) {
            err->code = SL_ENOMEM;
            snprintf(err->msg, sizeof err->msg, "out of memory for %zu token ids", cap);
            return SL_ENOMEM;
        }
        int n = sl_tokenize(m, text, len, ids, (int)(cap > INT_MAX ? INT_MAX : cap), flags, err);
        if (n >= 0 && (size_t)n <= cap) {
            *out = ids;
            return n;
        }
        free(ids);
        if (n < 0) return n;
        cap = (size_t)n;
    }
    err->code = SL_EINVAL;
    snprintf(err->msg, sizeof err->msg, "the tokenizer gave two different token counts");
    return SL_EINVAL;
}

int gen_chat_template(const sl_model *m, const char *name, bool thinking, const char *effort,
                      sl_chat_template *t, sl_err *err)
{
    char bos[64] = "", eos[64] = "";
    size_t n = 0;
    const char *p;
    /* BOS as text only when the tokenizer will not add it (as sl_chat_create) */
    if (!sl_model_add_bos(m) && (p = sl_token_piece(m, sl_model_token_bos(m), true, &n)) &&
        n < sizeof bos)
        memcpy(bos, p, n), bos[n] = '\0';
    if ((p = sl_token_piece(m, sl_model_token_eos(m), true, &n)) && n < sizeof eos)
        memcpy(eos, p, n), eos[n] = '\0';
    sl_chat_opts o = sl_chat_opts_default();
    o.name = name;
    o.bos_text = bos[0] ? bos : NULL;
    o.eos_text = eos[0] ? eos : NULL;
    o.enable_thinking = thinking;
    o.reasoning_effort = effort;
    const char *jinja = m->gguf ? sl_gguf_get_str(m->gguf, "tokenizer.chat_template") : NULL;
    return sl_chat_template_init(t, jinja, &o, err);
}

static void harmony_event(void *ud, const sl_harmony_event *ev)
{
    gen_harmony_out *h = ud;
    bool hidden = ev->channel == SL_HARMONY_ANALYSIS || ev->recipient[0];
    switch (ev->kind) {
    case SL_HARMONY_MSG_START:
        h->hidden_msg = hidden;
        if (hidden && h->show_reasoning) {
            if (ev->recipient[0]) fprintf(h->dst, "[call %s] ", ev->recipient);
            else fputs("[analysis] ", h->dst);
            h->tagged = true;
        }
        break;
    case SL_HARMONY_TEXT:
        if (!h->hidden_msg || h->show_reasoning) fwrite(ev->text, 1, ev->len, h->dst);
        break;
    case SL_HARMONY_MSG_END:
        if (h->hidden_msg && h->show_reasoning) fputc('\n', h->dst);
        h->hidden_msg = false;
        break;
    }
}

void gen_harmony_init(gen_harmony_out *h, FILE *dst, bool show_reasoning)
{
    memset(h, 0, sizeof *h);
    h->dst = dst;
    h->show_reasoning = show_reasoning;
    sl_harmony_stream_init(&h->hs);
}

void gen_harmony_feed(gen_harmony_out *h, const char *buf, size_t n)
{
    sl_harmony_stream_feed(&h->hs, buf, n, harmony_event, h);
}

void gen_harmony_finish(gen_harmony_out *h)
{
    sl_harmony_stream_finish(&h->hs, harmony_event, h);
}

void gen_decode_specials(gen_ctx *g) { g->detok_flags |= SL_DETOK_SPECIAL; }
