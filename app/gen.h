/* gen.h - what `sluice run` and `sluice chat` share: the model, context and
 * sampling flags, loading the model with a session and a sampler, evaluating
 * a token list in batches (with the prompt cache and its healing), and
 * printing one reply's events (the library's generation step, sl_gen_*).
 * The server shares the prompt's healing retry (gen_heal). The chat template
 * renderer and harmony's channel printer of run and chat are in gen_talk.h,
 * so that this header needs nothing but sluice.h. */
#ifndef SL_APP_GEN_H
#define SL_APP_GEN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model_flags.h"
#include "sluice.h"

typedef struct gen_opts {
    const char *model;        /* -m */
    int n_ctx;                /* -c; 0: min(train ctx, 4096) */
    model_flags mf;           /* -t, memory budget, streaming, I/O, --stats */
    int n_batch;              /* -b; prompt batch (default 512) */
    int n_predict;            /* -n; -1: until end of generation or full context */
    bool ignore_eos;          /* --ignore-eos: end-of-generation tokens do not stop */
    bool verbose;             /* --verbose */
    sl_sampling_params sp;    /* --temp ... --seed */
    sl_gen_draft spec_type;   /* --spec-type (none, ngram-simple, draft-mtp); -md */
    const char *draft_model;  /* -md, --model-draft: the draft model's file */
    int draft_max, draft_min; /* --draft-max, --draft-min */
    int spec_ngram;           /* --spec-ngram-size-n: the longest suffix looked up */
    bool draft_always;        /* --draft-always: verify every guess (no cost test) */
    bool spec_sampling;       /* --spec-sampling: speculative sampling */
} gen_opts;

/* Defaults; n_predict is the caller's (run: 128, chat: -1). */
void gen_opts_init(gen_opts *o, int n_predict);

/* If argv[*i] is one of the shared flags, parses it (and its value,
 * advancing *i) and returns 1; returns 0 if the flag is not a shared one,
 * -1 after printing an error for a bad value. cmd names the subcommand in
 * messages. */
int gen_opts_parse(gen_opts *o, const char *cmd, int argc, char **argv, int *i);

/* The help lines of the shared flags. */
void gen_opts_usage(FILE *f, int default_n_predict);

/* False, after printing "sluice CMD: no model given (-m MODEL.gguf)", when
 * o names no model. */
bool gen_opts_have_model(const gen_opts *o, const char *cmd);

/* The flags run and chat share beyond gen_opts (serve reads its own
 * --reasoning and --prompt-cache). */
typedef struct talk_opts {
    const char *reasoning;    /* --reasoning LEVEL (harmony's effort); NULL: the default */
    const char *cache;        /* --prompt-cache FILE; NULL: none */
    bool show_reasoning;      /* --show-reasoning: harmony's analysis printed too */
} talk_opts;

/* As gen_opts_parse for the talk_opts flags: 1 when argv[*i] is one
 * (its value taken, *i advanced), 0 when not, -1 after printing that a
 * value is missing. t starts zeroed. */
int talk_opts_parse(talk_opts *t, const char *cmd, int argc, char **argv, int *i);

/* Everything a generation needs; zero-initialise, free with gen_close. */
typedef struct gen_ctx {
    sl_model *m;
    sl_session *s;
    sl_sampling *smp;
    unsigned detok_flags;     /* SL_DETOK_* of the replies' text */
    int n_batch;
    double load_s;            /* seconds to load the model */
    const model_flags *mf;    /* for --progress; set by gen_open */
    sl_gen_draft spec_type;   /* drafting of the replies (gen_opts) */
    int draft_max, draft_min, spec_ngram;
    bool draft_always, spec_sampling;
    const int32_t *context;   /* the prompt's tokens, for prompt lookup (the caller's;
                                 NULL: the reply only) */
    int n_context;
    bool draft_off_said;      /* why drafting is off was printed */
    sl_draft_src *draft_src;  /* draft-mtp, -md: the drafter of s */
} gen_ctx;

/* Loads the model, creates a session (n_ctx, n_batch, kv type) and a
 * sampler. Prints the error itself (prefixed by cmd) and
 * returns non-zero on failure. */
int gen_open(gen_ctx *g, const gen_opts *o, const char *cmd);
void gen_close(gen_ctx *g);

/* Evaluates ids[0..n) in batches of at most g->n_batch, recording each in
 * the sampler's penalty history. */
int gen_eval(gen_ctx *g, const int32_t *ids, int n, sl_err *err);

/* The prompt of a reply (run, chat): tells the session that ids[0..n)
 * follow what it holds and end the prompt (sl_session_set_prompt: the
 * attention kernel of each row, so the bits do not depend on -b or on the
 * cache), then evaluates them like gen_eval.
 * --prompt-cache FILE: first restores the state saved in path when its
 * tokens begin like ids and its rows took this prompt's kernels, and
 * evaluates only the rest: at least the last token, so that poisoned
 * rows show (a recurrent model, which cannot go back to it, samples from
 * the logits the file kept); then saves the state of all n tokens to path
 * (crash-safe) unless the file held just these. A missing file is a cold start;
 * a refused one (truncated, corrupt, another model) or a failed save prints
 * one warning line prefixed by cmd and goes on. A path that a session file
 * may not replace (sl_session_save_check: a model, a text file, a device,
 * the model through a symlink) is neither read nor written: one warning
 * line, and the prompt is evaluated without the cache. A restored state
 * that yields non-finite values (its saved logits, or the evaluation after
 * it) is deleted, with one warning line, and the prompt evaluated from the
 * start. *n_reused receives the tokens not evaluated. Returns non-zero
 * only on an evaluation error. */
int gen_eval_cached(gen_ctx *g, const char *cmd, const char *path, const int32_t *ids, int n,
                    int *n_reused, sl_err *err);

/* The healing retry of a prompt cache, for run, chat and serve: a prompt
 * evaluated after a kept or restored state of kept tokens failed with rc.
 * When rc is the engine's non-finite refusal (SL_EFORMAT) and kept > 0,
 * that state may be poisoned: the session is emptied, the sampler's
 * history forgotten, *first receives err, and the caller evaluates the
 * prompt again from its start (true); the state was to blame when that
 * succeeds. False, nothing changed, otherwise. */
bool gen_heal(gen_ctx *g, int rc, int kept, const sl_err *err, sl_err *first);

/* After gen_eval_cached restored n_reused tokens from path, the reply
 * failed with rc: when that is the engine's non-finite refusal
 * (SL_EFORMAT) and nothing was evaluated after the restore (a recurrent
 * model's whole prompt, sampled from its saved logits), the restored state
 * is to blame, and the file is deleted with one warning line, so that it is
 * never restored again. Nothing otherwise. */
void gen_cache_reply_failed(const char *cmd, const char *path, int n_reused, int rc);

/* False when s holds logits with a NaN or infinity among them (a restored
 * state that is poisoned); true when they are finite or there are none. */
bool gen_logits_finite(sl_session *s);

typedef enum gen_stop {
    GEN_STOP_EOG = 0,    /* an end-of-generation / end-of-turn token, or a stop text */
    GEN_STOP_LIMIT,      /* max tokens produced */
    GEN_STOP_CTX,        /* the context is full */
    GEN_STOP_INTERRUPT,  /* *interrupt became non-zero */
} gen_stop;

typedef struct gen_reply_stats {
    int n_gen;           /* tokens sampled and printed (the stop token excluded) */
    gen_stop stop;
    double seconds;      /* sampling + evaluation time */
    sl_gen_draft_stats draft; /* what drafting did */
} gen_reply_stats;

/* Sets gp's drafting fields (drafter, lengths, prompt lookup's n-gram, the
 * drafter made at open, --draft-always, --spec-sampling) from g's options;
 * the reply's context is the caller's. */
void gen_draft_params(const gen_ctx *g, sl_gen_params *gp);

/* The line of drafting figures (--stats, -v) when drafting was asked for. */
void gen_draft_report(const gen_ctx *g, const gen_reply_stats *st);

typedef struct gen_harmony_out gen_harmony_out;

/* Prints one reply after the session's last evaluated token, step by step
 * (sl_gen_step): its text goes to out as whole UTF-8 characters, flushed
 * after every token, or, with harmony non-NULL, to that filter. Up to max
 * tokens (< 0: no limit); stops at the model's end-of-generation tokens, or
 * with chat non-NULL the chat's end-of-turn tokens and markers (unless
 * ignore_eos), and at stop_texts (NULL-terminated, or NULL), which are not
 * printed. *interrupt (may be NULL) stops it between tokens. Returns
 * non-zero on an engine error or when writing fails (SL_EIO; err filled). */
int gen_reply(gen_ctx *g, int max, const sl_chat *chat, bool ignore_eos,
              const char *const *stop_texts, volatile sig_atomic_t *interrupt, FILE *out,
              gen_harmony_out *harmony, gen_reply_stats *st, sl_err *err);

/* Reads a whole text file (or "-": standard input) into a NUL-terminated
 * buffer: a regular file of at most 1 GiB (outputs_read_text); prints the
 * error (with cmd) and returns NULL on failure. */
char *gen_read_file(const char *cmd, const char *path, size_t *len);



/* Makes g's replies decode special tokens as their text (the harmony
 * markers must reach gen_harmony_out). */
void gen_decode_specials(gen_ctx *g);

/* Tokenizes text with the given SL_TOKENIZE_* flags into a new array;
 * returns the count, or a negative SL_E* with err filled. */
int gen_tokenize(const sl_model *m, const char *text, size_t len, unsigned flags,
                 int32_t **out, sl_err *err);

#endif
