/* sluice.h - public C API of the sluice inference engine.
 *
 * Two objects:
 *   sl_model    immutable after load: hyperparameters, dense weights, the
 *               expert store, the tokenizer. Shareable by several sessions,
 *               also on different threads (with streamed experts they take
 *               turns at each layer's experts).
 *   sl_session  one timeline: KV cache, scratch buffers, position. Not
 *               thread-safe; use one per thread of conversation.
 *
 * Errors: functions returning int give 0 (SL_OK) on success or a negative
 * SL_E* code, and fill the caller's sl_err with a sentence naming the
 * problem. The library never prints and never exits. */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ----------------------------------------------------------- */

enum {
    SL_OK = 0,
    SL_EIO = -1,          /* the OS refused a read, write or open */
    SL_EFORMAT = -2,      /* malformed input (bad file, wrong shape) */
    SL_ENOMEM = -3,       /* allocation failed or a size overflowed */
    SL_EINVAL = -4,       /* invalid argument */
    SL_EUNSUPPORTED = -5, /* valid input sluice does not handle */
};

#define SL_ERR_MSG_MAX 512

typedef struct sl_err {
    int code;                 /* last SL_E* code, SL_OK if none */
    char msg[SL_ERR_MSG_MAX]; /* NUL-terminated message */
} sl_err;

/* ---- model ------------------------------------------------------------ */

typedef struct sl_model sl_model;
typedef struct sl_session sl_session;

typedef enum sl_kv_type {
    SL_KV_F16 = 0, /* default: half the memory, exact enough for inference */
    SL_KV_F32 = 1,
    SL_KV_Q8_0 = 2, /* blocks of 32 values, one f16 scale each (8.5 bits a value) */
    SL_KV_Q4_0 = 3, /* blocks of 32 values, 4-bit levels and an f16 scale (4.5 bits) */
} sl_kv_type;

typedef enum sl_stream_mode {
    SL_STREAM_AUTO = 0, /* stream routed experts when the model does not fit the budget */
    SL_STREAM_ON = 1,   /* always stream (--moe-stream) */
    SL_STREAM_OFF = 2,  /* everything resident (--no-stream) */
} sl_stream_mode;

typedef enum sl_dense_mode {
    SL_DENSE_ANON = 0,  /* dense weights read into private memory */
    SL_DENSE_MMAP = 1,  /* dense weights memory-mapped from the file */
} sl_dense_mode;

typedef enum sl_io_kind {
    SL_IO_KIND_PREAD = 0,  /* lanes of positional reads */
    SL_IO_KIND_URING = 1,  /* io_uring (falls back to pread if unavailable) */
} sl_io_kind;

/* Which llama.cpp build's arithmetic to follow where two builds compute an
 * operation differently in the last bit (docs/ARCHITECTURE.md, "llama.cpp
 * revisions"); today only qwen35moe's DeltaNet q/k norm differs. */
typedef enum sl_llama_rev {
    SL_LLAMA_REV_2026_08 = 0, /* the reference fixtures' build: the default */
    SL_LLAMA_REV_2026_09,     /* node-llama-cpp 3.22.1's (bench/llama_ref.sh) */
    SL_LLAMA_REV_COUNT
} sl_llama_rev;

typedef struct sl_model_params {
    int n_threads;          /* compute threads, one pool shared by the model's
                               sessions; <= 0 picks the number of cores */
    sl_stream_mode stream;
    uint64_t mem_budget;    /* bytes the process may use; 0 = available memory
                               (cgroup limits honoured) minus a safety margin */
    uint64_t cache_bytes;   /* expert cache size; 0 = what the budget leaves */
    int cache_experts;      /* expert cache size in experts (overrides cache_bytes) */
    int n_ctx_hint;         /* context length the KV estimate assumes; 0 = 4096 */
    int n_logits_hint;      /* rows of logits a session keeps (its batch, when it
                               keeps every token's, as perplexity does); 0 = 1 */
    int io_threads;         /* I/O lanes; 0 = 8 (streamed experts) */
    sl_io_kind io_backend;
    int io_queue_depth;     /* reads in flight per io_uring lane; 0 = 4 */
    bool no_overlap;        /* wait for every read before computing a layer's experts */
    bool no_prefetch;       /* never guess the next layer's experts */
    bool prefetch_always;   /* read the guessed experts ahead however often the
                               guesses are wrong (default: only while at least
                               80 % of guessed experts turn out to be asked for) */
    sl_dense_mode dense;
    const char *io_trace_path; /* log every expert read to this file; NULL: off */
    bool describe_only;     /* bind every tensor and describe each layer, but read
                               no weight and plan nothing (sluice inspect); such a
                               model cannot run: sessions on it are refused */
    /* Lossy routing knobs (opt-in, never default; sl_model_knob_stats says
     * what they cost). */
    int n_expert_used;      /* route each token to this many experts, fewer than
                               the file's top-k; 0 = the file's */
    int cache_route_keep;   /* J of --cache-route J,M: keep the router's top J and
                               fill the other slots with the best-ranked of its top
                               cache_route_from (M) already in the expert cache */
    int cache_route_from;   /* M; 0 = --cache-route off */
    /* Reading the resident weights at load (sl_model_load_stats). */
    bool load_plain;        /* one buffered read per tensor (for comparisons)
                               instead of direct, multi-lane reads laid out
                               as the file is */
    void (*load_progress)(void *ud, uint64_t done, uint64_t total); /* bytes read
                               so far of total, after each read; NULL: none */
    void *load_progress_ud;
    /* The cache types of sessions that do not choose (-ctk / -ctv; default
     * f16), for every layer kind as sl_session_params.type_k / type_v
     * say; the memory plan sizes the KV cache with them. A type a layer
     * cannot cache fails the load with SL_EINVAL. */
    sl_kv_type cache_type_k;
    sl_kv_type cache_type_v;
    /* Sliding-window attention layers keep every position of the context
     * (--swa-full) instead of a ring of their window and one micro-batch;
     * the same outputs, more memory, any truncation. Sessions take it. */
    bool swa_full;
    /* The llama.cpp revision to reproduce (0: SL_LLAMA_REV_2026_08); a value
     * outside the enum refuses a model that depends on it with SL_EINVAL. */
    sl_llama_rev llama_rev;
    /* Memory the caller keeps besides the sessions (a server's prompt
     * cache of session states), planned before the expert cache. 0 and
     * host_cache_seqs > 0: sized like the planned context's KV cache plus
     * host_cache_seqs sequences' recurrent states and snapshots, but at most a quarter of
     * what the budget leaves besides the dense weights and sessions when
     * the whole model would not fit with it. sl_stream_stats says what
     * was planned. */
    uint64_t host_cache_bytes;
    int host_cache_seqs;
    /* Memory a drafter keeps besides the model (sl_draft_plan_bytes: the
     * MTP block's or a draft model's weights and the sessions it runs),
     * planned with the dense weights, before the expert cache. */
    uint64_t drafter_bytes;
    /* > 0: load the file's MTP (nextn) block number nextn_block alone, as
     * a model of one layer with the block's own input and head tensors
     * (the MTP drafter's, engine/draft_mtp.c); fails with SL_EUNSUPPORTED
     * when the file has fewer. 0: the main layers. */
    int nextn_block;
} sl_model_params;

/* Defaults for sl_model_params. */
sl_model_params sl_model_default_params(void);

/* Loads the GGUF model at path (split parts are found automatically),
 * validates its architecture, hyperparameters and tensor shapes, and reads
 * the weights. On success *out is owned by the caller (sl_model_free). */
int sl_model_load(sl_model **out, const char *path, const sl_model_params *params,
                  sl_err *err);

/* Frees a model; every session created from it must be freed first. */
void sl_model_free(sl_model *m);

/* Where the memory goes and what streaming did, for --stats. Figures are
 * cumulative since load; the caller owns the struct. */
typedef struct sl_stream_stats {
    bool streaming;           /* routed experts are read from the file */
    uint64_t budget_bytes;    /* memory budget used for planning */
    uint64_t reserved_bytes;  /* of it, set aside for a session (KV cache, scratch) */
    uint64_t dense_bytes;     /* resident dense weights */
    uint64_t expert_bytes;    /* all routed experts in the file */
    uint64_t expert_cycle_bytes; /* one token's experts: layers x top-k x expert */
    uint64_t cache_bytes;     /* expert cache (0 when not streaming) */
    uint64_t n_slots;         /* experts the cache holds at once */
    uint64_t hits, misses, evictions, rereads;
    uint64_t reads, read_bytes, window_bytes;
    double stall_s;           /* compute waited on reads */
    double manage_s;          /* cache bookkeeping and read submission */
    double lat_p50_us, lat_p90_us, lat_p99_us;
    /* hits and misses count the lookups of the experts a layer asked for;
     * an expert read ahead (prefetched) counts as a hit when asked for */
    uint64_t prefetched;      /* experts read ahead for the next layer */
    uint64_t prefetch_used;   /* of those, asked for by their layer */
    uint64_t prefetch_wasted; /* evicted before their layer asked */
    uint64_t guessed, guessed_right; /* experts guessed for the next layer, and
                                        how many of them it asked for */
    char io_mode[96];         /* e.g. "pread x4, O_DIRECT" */
    bool io_buffered_fallback; /* the filesystem refused O_DIRECT: buffered reads
                                  with the page cache dropped after each read */
    char warning[256];        /* planning warning (cache below one token's cycle), or "" */
    uint64_t kv_bytes;        /* of reserved_bytes, the KV cache of the planned context
                                 (sliding-window layers' rings counted as stored) */
    int kv_ctx;               /* that context (-c) */
    uint64_t host_cache_bytes; /* memory planned for the caller's own cache
                                  (sl_model_params.host_cache_bytes) */
    uint64_t drafter_bytes;    /* memory planned for a drafter
                                  (sl_model_params.drafter_bytes) */
    /* what the runtime's setters (below) started, and read-ahead's detail */
    char cache_policy[16];    /* the expert cache's eviction policy ("" resident) */
    char io_direct_note[256]; /* why O_DIRECT fell back, or "" */
    char io_uring_note[256];  /* why io_uring fell back, or "" */
    double drive_bps;         /* the drive's rate (0: unknown) ... */
    bool drive_cached;        /* ... set (sl_model_set_drive_rate), else measured */
    uint64_t drive_cal_bytes; /* the measurement's bytes and lanes */
    unsigned drive_cal_lanes;
    bool replaying;           /* a route trace is replayed: its steps, prompt
                                 steps, steps replayed and wraps past its end */
    int64_t replay_steps, replay_prompt, replay_done, replay_wraps;
    uint64_t warm_planned, warm_loaded, warm_used, warm_bytes; /* the warm start's
                                 preload: experts listed, read, then asked for; bytes */
    double warm_s;            /* the preload's first submit to last byte */
    uint64_t union_guessed, union_right; /* guessed / guessed_right for batches */
    uint64_t learned_guessed, learned_right, learned_sets, learned_set_misses;
                              /* guesses learned online, and the sets after them */
    uint64_t prefetch_dropped; /* read ahead cancelled: its layer came without it */
    /* the reads that landed since sl_model_stream_mark (all 0 before one):
     * how long they queued for a lane, how long the drive took, and the
     * share of the lanes' time the drive was busy with them */
    uint64_t mark_reads;
    double mark_queue_p50_us, mark_queue_p90_us, mark_queue_p99_us;
    double mark_drive_p50_us, mark_drive_p90_us, mark_drive_p99_us;
    double mark_lanes_busy;
    /* times the streamer's lock was taken: once per streamed routed layer a
     * batch runs through, once per setter call (sl_model_set_*, usage,
     * mark, flush); this read's own is not counted */
    uint64_t lock_takes;
} sl_stream_stats;

void sl_model_stream_stats(const sl_model *m, sl_stream_stats *out);

/* Starts the phase that sl_stream_stats' mark_* figures describe (e.g. the
 * decode after a prompt): they count the expert reads that land from now
 * on. Takes the runtime's lock; nothing to do for a resident model. */
void sl_model_stream_mark(const sl_model *m);

/* Flushes the --io-trace file (sl_model_params.io_trace_path) so the lines
 * written so far reach it; SL_EIO when they did not (a full disk). Call
 * between evaluations. SL_OK when no trace is written. */
int sl_model_io_trace_flush(const sl_model *m, sl_err *err);

/* Basic facts, for front-ends. */
/* Layers the forward pass runs, and what mixes layer il's tokens:
 * "attention" or "gated DeltaNet" (static strings). */
int sl_model_n_layer(const sl_model *m);
const char *sl_model_layer_mixer(const sl_model *m, int il);

/* The state a session of this model keeps: bytes per token of context
 * (every attention layer's K and V in the default f16 cache) and per
 * sequence (recurrent layers' states; a session keeps a second copy as its
 * snapshot). */
void sl_model_state_bytes(const sl_model *m, uint64_t *per_token, uint64_t *per_seq);

/* Bytes per token of context of every layer's row streams with cache
 * types type_k and type_v (-ctk / -ctv, sl_session_params); 0 when a layer
 * cannot cache them (a quantised type on head sizes that are not multiples
 * of 32, or on a kind without quantised kernels). */
uint64_t sl_model_kv_bytes_per_token(const sl_model *m, sl_kv_type type_k, sl_kv_type type_v);

/* Bytes of every layer's row streams in a session of n_ctx positions and
 * micro-batches of n_batch (both >= 1) with cache types type_k and
 * type_v, sliding-window layers as the rings sessions keep (every
 * position with swa_full): the sizing sessions and the memory plan use.
 * 0 when a layer cannot cache the types or a size overflows. */
uint64_t sl_model_kv_bytes_at(const sl_model *m, sl_kv_type type_k, sl_kv_type type_v, int n_ctx,
                              int n_batch, bool swa_full);

/* The i-th warning about the model's file (i from 0: an unknown
 * pre-tokenizer, special token ids outside the vocabulary ...), escaped for
 * a terminal, or NULL past the last. Owned by m. */
const char *sl_model_warning(const sl_model *m, int i);
int sl_model_n_vocab(const sl_model *m);
/* The micro-batch llama.cpp cuts a prompt into (its default n_ubatch);
 * sl_session_set_prompt's row kinds follow it. */
#define SL_LLAMA_UBATCH 512

int sl_model_n_ctx_train(const sl_model *m);

/* The batch, at most n_batch, that a caller evaluating a longer prompt
 * should pass to sl_session_eval to get llama.cpp's bits: SL_LLAMA_UBATCH
 * where some product's kernel depends on how many tokens llama.cpp's
 * micro-batch gives it (IQ4_XS under --llama-ref 2026-09, its IQ panel)
 * and n_batch is larger, else n_batch, whose size never changes the bits. */
int sl_model_exact_batch(const sl_model *m, int n_batch);
const char *sl_model_arch_name(const sl_model *m);

/* ---- session ------------------------------------------------------------ */

typedef struct sl_session_params {
    int n_ctx;          /* KV capacity in tokens; <= 0: min(train ctx, 4096) */
    bool all_logits;    /* keep logits of every evaluated token (perplexity) */
    int n_batch_max;    /* largest batch passed to sl_session_eval; <= 0: 512 */
    /* The cache types (sl_kv_type; -1, the default: the model's
     * cache_type_k / cache_type_v), the one setting for every layer kind,
     * as llama.cpp's -ctk / -ctv: attention layers cache K as type_k and
     * V as type_v; the kinds without a V keep everything they cache in
     * the K cache, of type_k: multi-head latent attention's latent and
     * glm-dsa's indexer keys, deepseek4's window and compressed rows
     * (these take f16 or f32 only); gated DeltaNet keeps an f32 state.
     * A type a layer cannot cache fails sl_session_create (SL_EINVAL). */
    int type_k, type_v;
    bool swa_full;      /* keep every position on sliding-window layers (no
                           ring); also when the model was loaded with it */
    int n_logit_rows;   /* rows of logits kept of each batch: its last min(n,
                           n_logit_rows) tokens' (sl_session_logits_at(s, 0) the
                           earliest of them); <= 0: 1. A generator drafts at most
                           n_logit_rows - 1 tokens a step. all_logits: every row */
    bool attn_rot_off;  /* quantised K / V caches without llama.cpp's
                           Walsh-Hadamard attention rotation (its
                           LLAMA_ATTN_ROT_DISABLE=1); false: rotated, as
                           llama.cpp computes by default */
    int decode_split;   /* llama.cpp's thread count whose one-token
                           micro-batch attention to reproduce (a generated
                           row, or a prompt's last row alone in its
                           micro-batch: sl_session_set_prompt): over a cache
                           view of 512+ positions (n_ctx and positions padded
                           to 256) it splits the positions in that many
                           chunks and combines them; <= 1 (the default): one
                           chunk, as llama.cpp on one thread. Any value keeps
                           results independent of n_threads and of batch
                           splits */
} sl_session_params;

sl_session_params sl_session_default_params(void);

/* Creates a session bound to m (m must outlive it). Allocates the KV cache
 * and all scratch up front: evaluation allocates nothing afterwards. */
int sl_session_create(sl_session **out, sl_model *m, const sl_session_params *p,
                      sl_err *err);
void sl_session_free(sl_session *s);

/* Appends n tokens at the current position and runs the model over them.
 * Fails (SL_EINVAL) if a token id is out of range, n exceeds n_batch_max,
 * or the KV cache would overflow; the session is unchanged then. */
int sl_session_eval(sl_session *s, const int32_t *tokens, int n, sl_err *err);

/* Logits (n_vocab floats) of the last evaluated token; with all_logits,
 * sl_session_logits_at(s, i) gives those of token i of the last batch
 * (with n_logit_rows, of token n - rows + i of a batch of n).
 * Valid until the next eval. */
const float *sl_session_logits(const sl_session *s);
const float *sl_session_logits_at(const sl_session *s, int i);

/* With all_logits: the rows at positions before pos ask no logits from
 * now on (sl_session_logits_at gives NULL for them), as llama-perplexity
 * asks only each chunk's second half. llama.cpp then computes those rows
 * only as far as its output rows need them (engine/out_rows.h), and so
 * does sluice: the other rows' results do not change, their cost falls.
 * 0 (the default): every row. Fails (SL_EINVAL) without all_logits or
 * for a negative pos. */
int sl_session_set_outputs_from(sl_session *s, int pos, sl_err *err);

/* The prompt of the reply about to be evaluated: n_prompt tokens from
 * position 0 of the sequence (the whole prompt, what the session already
 * holds included). From now on each row's attention takes the kernel
 * llama.cpp's CPU flash attention takes for it when it evaluates that
 * prompt cold in micro-batches of 512 and then decodes one token at a
 * time: a prompt row at position p lies in micro-batch p / 512, of
 * min(512, n_prompt - 512 (p / 512)) tokens, and takes the one-chunk form
 * when that is under 64 tokens, else the tiled one; a row at or past
 * n_prompt (generated, a drafted verify's) takes the one-chunk form. So
 * the bits depend on the request only, never on how it is split into
 * batches (-b, chunked prefill, a reused prefix, a token evaluated again).
 * Returns how many of the positions the session holds were evaluated as
 * that rule gives them (<= n_past): a caller keeping a prefix keeps at
 * most that many, and evaluates the rest. n_prompt < 0: no prompt given
 * (as a new session): every row tiled. Never fails. */
int sl_session_set_prompt(sl_session *s, int n_prompt);

/* Number of tokens in the session's state, and forgetting all from
 * position n on (n <= sl_session_n_past), e.g. to restart or to rewind a
 * chat turn. Attention layers can go back to any position (sliding-window
 * layers only as far as their ring holds: see sl_session_truncate_floor;
 * earlier fails with SL_EINVAL, unchanged); a recurrent
 * layer (qwen35moe's gated DeltaNet) summarises the whole sequence: such a
 * model can restart (n = 0) or go back to its snapshot, the position
 * where the last multi-token batch (a prompt, or its last micro-batch)
 * ended; any other 0 < n < n_past fails with SL_EINVAL and leaves the
 * session as it was. The snapshot costs one more copy of the recurrent
 * state, which the memory plan counts. */
int sl_session_n_past(const sl_session *s);
int sl_session_n_ctx(const sl_session *s);

/* The session's cache types (the resolved type_k / type_v of its
 * parameters), and a type's name ("f16", "q8_0", ...; "?" for a value
 * outside the enum). */
void sl_session_kv_types(const sl_session *s, sl_kv_type *type_k, sl_kv_type *type_v);
const char *sl_kv_type_name(sl_kv_type t);

/* What each kind of the session's layers caches, for a log line: each
 * kind with rows per position once, in layer order, as "attention K q8_0,
 * V f16" or "mla K f32" (kind names as sl_model_layer_mixer's, deepseek4's
 * "ds4"), joined by "; " into buf (cap bytes, NUL-terminated, cut to
 * fit); "none" when no layer caches rows. Returns buf. */
const char *sl_session_cache_text(const sl_session *s, char *buf, size_t cap);
int sl_session_truncate(sl_session *s, int n);

/* Sliding-window layers keep a ring of their window and one micro-batch
 * (unless swa_full), so they can go back only to positions whose window
 * they still hold: sl_session_truncate_floor gives the earliest n > 0
 * allowed (every n from it to n_past is; 0 always is; a recurrent model
 * allows only its snapshot besides). sl_session_truncate_err is
 * sl_session_truncate with the reason of a refusal (SL_EINVAL) in err;
 * the session is unchanged then and the caller evaluates again from 0. */
int sl_session_truncate_floor(const sl_session *s);
int sl_session_truncate_err(sl_session *s, int n, sl_err *err);

/* ---- session state in memory (a host-RAM prompt cache) -------------------- */

/* A copy of the state of a session's first n positions, kept in this
 * process (engine/session_mem.c): each layer's rows it still holds (a
 * sliding window's ring: its window), recurrent states at n and at the
 * snapshot before n, the last logits when current. Restored into any
 * session of the same model created with the same parameters. */
typedef struct sl_state sl_state;

/* Copies the first n positions of s into *out (owned by the caller:
 * sl_state_free). The same n as sl_session_save allows (a recurrent model:
 * the session's position or its snapshot; a ring still holding the window
 * before n), else SL_EINVAL; SL_ENOMEM. s is not changed. */
int sl_state_capture(sl_session *s, int n, sl_state **out, sl_err *err);
void sl_state_free(sl_state *st);

/* Positions captured, bytes held, and whether the last logits are. */
int sl_state_n(const sl_state *st);
uint64_t sl_state_bytes(const sl_state *st);
bool sl_state_has_logits(const sl_state *st);

/* Whether st can be restored at k (1 <= k <= its n): k itself, or on a
 * model without recurrent layers any k whose sliding windows were
 * captured, or a recurrent model's snapshot. */
bool sl_state_restorable(const sl_state *st, int k);

/* The largest position <= k that st can be restored at (its n when k is
 * larger), 0 when none. */
int sl_state_restorable_below(const sl_state *st, int k);

/* Replaces the state of s by st's first k positions (afterwards
 * sl_session_n_past(s) is k; the logits are st's when k is its n, else
 * none). SL_EINVAL, s unchanged, when k is not restorable or s's layers
 * differ in shape from the captured ones. */
int sl_state_restore(sl_session *s, const sl_state *st, int k, sl_err *err);

/* ---- saved session state (prompt cache) ---------------------------------- */

/* A session's state written to a file and read back later, by this process
 * or another, so that an evaluated prompt need not be evaluated again.
 * The file holds, after a header (magic "SLSTATE1", version, the model's
 * identity, the cache value type, the token count), the tokens, a table of
 * every layer's state kind and sizes (row streams per position, sequence
 * state), each layer's rows for the saved positions and its sequence
 * state, the recurrent snapshot when there is one, and the logits of the
 * last token when they are current; a 64-bit checksum covers the header
 * and another everything after it. The model's identity is a hash of each
 * model file's size, its GGUF header (metadata and tensor table) and the
 * first and last 64 KiB of its tensor data, so that another model of the
 * same shapes is told apart too. */

/* Writes the state of the first n positions of s, which hold tokens[0..n),
 * to path, crash-safe: a temporary file beside it, fsync, then a rename
 * over path (an old file of that name survives any failure). n must be
 * <= sl_session_n_past(s); on a model with recurrent layers n must be the
 * session's position or its snapshot's (see sl_session_truncate). The
 * last logits are saved when n is the session's position and they are
 * current. The session is not changed. SL_EINVAL (bad n, a token out of
 * the vocabulary, a path sl_session_save_check refuses), SL_EIO (naming
 * the file and the OS reason), SL_ENOMEM. */
int sl_session_save(sl_session *s, const char *path, const int32_t *tokens, int n,
                    sl_err *err);

/* Whether sl_session_save may write path, which it checks itself too: a
 * session file replaces only a missing or empty file or another session
 * file (one beginning with its magic), never a model, a text or any other
 * file, a directory or device, nor a file the process has open as an input
 * (the model), also through a symlink or hard link. SL_OK when it may;
 * else SL_EINVAL (SL_EIO when path cannot be examined) with one sentence
 * naming path and why, path untouched. */
int sl_session_save_check(const char *path, sl_err *err);

/* Replaces the state of s by the one saved in path. Returns the number of
 * saved tokens (>= 0) and writes them to tokens[0..) when that number is
 * <= n_max; if it is larger, nothing is restored and the number is
 * returned for a retry (tokens may be NULL when n_max is 0: a peek).
 * Afterwards sl_session_n_past(s) is that number and sl_session_logits
 * gives the saved logits (NULL when none were saved: evaluate at least one
 * token before sampling). A file that is truncated, corrupt (a checksum
 * differs), of another version, made for another model, or that does not
 * fit the session (another cache value type, more tokens than its
 * context) is refused with SL_EFORMAT (or SL_EIO when it cannot be read)
 * and one sentence naming the file and the reason; s is then unchanged. */
int sl_session_load(sl_session *s, const char *path, int32_t *tokens, int n_max,
                    sl_err *err);

/* ---- tokens ------------------------------------------------------------- */

/* The tokenizer comes from the model file's tokenizer.ggml.* metadata and is
 * loaded with the model. Every function below fails with SL_EUNSUPPORTED on
 * a model whose file carries no tokenizer. Token ids are int32_t in
 * [0, sl_model_n_tokens(m)). */

/* An absent token (no BOS in the vocabulary, ...). */
#define SL_TOKEN_NONE (-1)

/* Number of tokens the tokenizer knows (<= sl_model_n_vocab: a model may
 * pad its embedding matrix); 0 without a tokenizer. */
int sl_model_n_tokens(const sl_model *m);

/* Special ids, SL_TOKEN_NONE when the vocabulary has none. */
int32_t sl_model_token_bos(const sl_model *m);
int32_t sl_model_token_eos(const sl_model *m);
/* End of generation: EOS, EOT, EOM and end-of-turn control tokens
 * (<|im_end|>, <|eot_id|>, ...). False for ids out of range. */
bool sl_model_token_is_eog(const sl_model *m, int32_t id);
/* Whether the model expects BOS at the start of a prompt (metadata). */
bool sl_model_add_bos(const sl_model *m);

enum {
    SL_TOKENIZE_ADD_BOS = 1u << 0,       /* prepend BOS if the vocabulary has one */
    SL_TOKENIZE_PARSE_SPECIAL = 1u << 1, /* "<|im_start|>" in the text becomes the
                                            control token, not its letters */
};

/* Encodes text[0..len) (any bytes) with SL_TOKENIZE_* flags. Returns the
 * number of tokens of the whole text (>= 0); they are written to ids only
 * if that number is <= n_max, otherwise ids is left untouched and the
 * caller retries with a buffer of the returned size (ids may be NULL when
 * n_max is 0: a pure count). Negative SL_E* on failure: SL_EINVAL (NULL
 * text with len > 0, n_max < 0, a text of more than INT_MAX tokens),
 * SL_ENOMEM, SL_EUNSUPPORTED (no tokenizer). */
int sl_tokenize(const sl_model *m, const char *text, size_t len, int32_t *ids, int n_max,
                unsigned flags, sl_err *err);

/* The bytes token id stands for, owned by the model (valid while it lives;
 * not NUL-terminated, length in *len). A piece may be a fragment of a
 * multi-byte UTF-8 character: to print a stream use sl_detok_*. Control
 * tokens give "" unless special is true (then their text, e.g.
 * "<|im_end|>"). Returns NULL (and *len = 0) for an id out of range or a
 * model without a tokenizer. */
const char *sl_token_piece(const sl_model *m, int32_t id, bool special, size_t *len);

enum {
    SL_DETOK_SPECIAL = 1u << 0,     /* render control tokens as their text */
    SL_DETOK_STRIP_SPACE = 1u << 1, /* drop the space a SentencePiece encoder
                                       put before the first word (decode a
                                       whole text, not a continuation) */
};

/* Decodes ids[0..n) to text with SL_DETOK_* flags: an incomplete UTF-8
 * sequence at the end becomes U+FFFD, ill-formed bytes too. Returns the
 * text's length in bytes (>= 0); the text and a terminating NUL are written
 * to buf only if length < cap, otherwise buf is untouched and the caller
 * retries with cap = length + 1 (buf may be NULL when cap is 0). Negative
 * SL_E* on failure: SL_EINVAL (an id out of range, naming its index; n < 0),
 * SL_ENOMEM, SL_EUNSUPPORTED. */
int sl_detokenize(const sl_model *m, const int32_t *ids, int n, char *buf, size_t cap,
                  unsigned flags, sl_err *err);

/* Streaming decoder for printing tokens as they are generated: it emits
 * only complete, valid UTF-8 and holds back a partial multi-byte character
 * until its last byte arrives. One per stream, not thread-safe. */
typedef struct sl_detok sl_detok;

/* Creates a decoder for m's tokenizer (m must outlive it) with SL_DETOK_*
 * flags; *out is owned by the caller (sl_detok_free). SL_ENOMEM,
 * SL_EUNSUPPORTED. */
int sl_detok_create(sl_detok **out, const sl_model *m, unsigned flags, sl_err *err);
void sl_detok_free(sl_detok *d);

/* Feeds one id; *text and *len receive the newly completed text (possibly
 * empty), owned by d and valid until the next call on d. Never allocates.
 * SL_EINVAL for an id out of range (d is unchanged). */
int sl_detok_push(sl_detok *d, int32_t id, const char **text, size_t *len, sl_err *err);

/* Ends the stream: held-back bytes come out as one U+FFFD. Same ownership
 * as push. The decoder is then ready for a new stream. */
void sl_detok_flush(sl_detok *d, const char **text, size_t *len);

/* ---- sampling ------------------------------------------------------------ */

/* Sampling chain, in this order: penalties over the last penalty_last_n
 * accepted tokens, then (temp <= 0) argmax, else top-k, top-p, min-p (on
 * the untempered logits), temperature, and a seeded draw. The same params,
 * seed, accepted tokens and logits always give the same token. */
typedef struct sl_sampling_params {
    float temp;              /* <= 0: greedy (argmax). default 0.8 */
    int32_t top_k;           /* <= 0: off. default 40 */
    float top_p;             /* in (0, 1]; 1: off. default 0.95 */
    float min_p;             /* in [0, 1]; 0: off. default 0.05 */
    float repeat_penalty;    /* > 0; 1: off. default 1.0 */
    float presence_penalty;  /* subtracted once per seen token; 0: off */
    float frequency_penalty; /* subtracted per occurrence; 0: off */
    int32_t penalty_last_n;  /* >= 0 tokens of history; 0: no penalties. default 64 */
    uint64_t seed;           /* RNG seed */
} sl_sampling_params;

typedef struct sl_sampling sl_sampling;

sl_sampling_params sl_sampling_default_params(void);

/* Creates a sampler over n_vocab logits (sl_model_n_vocab of the model
 * whose logits it will see). Allocates everything here; sample, accept and
 * reset never allocate. SL_EINVAL naming the bad field (NaN, top_p outside
 * (0,1], min_p outside [0,1], repeat_penalty <= 0, penalty_last_n < 0,
 * n_vocab <= 0), SL_ENOMEM. *out is owned by the caller (sl_sampling_free). */
int sl_sampling_create(sl_sampling **out, const sl_sampling_params *p, int n_vocab,
                       sl_err *err);
void sl_sampling_free(sl_sampling *s);

/* Picks a token from logits (n_vocab floats, e.g. sl_session_logits; read
 * only). Returns the id (>= 0) or SL_EINVAL (NULL logits, a NaN or +inf
 * logit, all -inf). Does not record the token: call sl_sampling_accept. */
int sl_sampling_sample(sl_sampling *s, const float *logits, sl_err *err);

/* Speculative sampling against a guessed token (draft; < 0: none, then the
 * same as sl_sampling_sample bit for bit): the result is draft with the
 * chain's probability p(draft), else drawn from the others renormalised,
 * so it is distributed exactly as sl_sampling_sample's, with one draw of
 * the RNG as ever, but the token drawn differs. Errors as sl_sampling_sample. */
int sl_sampling_sample_draft(sl_sampling *s, const float *logits, int32_t draft, sl_err *err);

/* Records id in the penalty history (prompt tokens may be recorded too).
 * SL_EINVAL for an id outside [0, n_vocab). */
int sl_sampling_accept(sl_sampling *s, int32_t id, sl_err *err);

/* Forgets the history and rewinds the RNG to its seeded state. */
void sl_sampling_reset(sl_sampling *s);

/* ---- generation -------------------------------------------------------- */

/* One reply after a session's last evaluated token, pulled a step at a
 * time: each step samples from the session's logits, decides whether the
 * reply stops (an end-of-generation token, a stop text, the token limit,
 * a full context, a cancel), and gives the token(s) taken, their text as
 * whole UTF-8 characters (a stop text and whatever could still begin one
 * are held back; the stop text itself never appears), and on request
 * their log-probabilities. Several tokens may be taken in one step.
 *
 * The step comes in two halves so that a caller may evaluate several
 * generators' tokens in one forward pass (sl_session_eval_multi): the
 * tokens taken but not yet evaluated are sl_gen_pending's; the caller
 * evaluates some of them on the session and says so (sl_gen_evaluated);
 * sl_gen_next then gives the next event once none is pending.
 * sl_gen_step does both halves with sl_session_eval. A stop token is not
 * taken; a stop text's last token and the token that filled the context
 * are taken but never pending. One generator per reply, one thread. */
typedef struct sl_gen sl_gen;
typedef struct sl_chat sl_chat;

typedef enum sl_gen_stop {
    SL_GEN_GOING = 0,    /* not stopped: step again */
    SL_GEN_EOG,          /* an end-of-generation (or the chat's end-of-turn) token */
    SL_GEN_STOP_TEXT,    /* a stop text appeared (event.stop_text says which) */
    SL_GEN_LIMIT,        /* max_tokens taken */
    SL_GEN_CTX,          /* the context is full */
    SL_GEN_CANCELLED,    /* sl_gen_cancel */
} sl_gen_stop;

#define SL_GEN_MAX_STOPS 24     /* stop texts in all (the caller's and the chat's) */
#define SL_GEN_MAX_STOP_LEN 64  /* bytes of one stop text */
#define SL_GEN_MAX_TOP 20       /* alternatives a logprob may list */

/* The model's own log-probabilities at a step (log-softmax of the logits
 * the sampler saw, before penalties, temperature or any cut). */
typedef struct sl_gen_logprob {
    int32_t id;                       /* the token taken */
    float lp;                         /* its log-probability */
    int n_top;                        /* alternatives listed */
    int32_t top_id[SL_GEN_MAX_TOP];   /* the most likely, descending (ties: lower id) */
    float top_lp[SL_GEN_MAX_TOP];
} sl_gen_logprob;

/* Drafters for speculative decoding (sl_gen_params.draft). */
typedef enum sl_gen_draft {
    SL_GEN_DRAFT_NONE = 0,
    SL_GEN_DRAFT_NGRAM,  /* prompt lookup: the tokens that followed the latest earlier
                            occurrence of the context's last n tokens (llama.cpp's
                            --spec-type ngram-simple) */
    SL_GEN_DRAFT_MTP,    /* the model's own MTP (nextn) block, greedy (llama.cpp's
                            --spec-type draft-mtp): sl_gen_params.draft_src from
                            sl_draft_mtp_create */
    SL_GEN_DRAFT_MODEL,  /* a smaller model with the same vocabulary, greedy
                            (llama.cpp's -md): draft_src from sl_draft_model_create */
} sl_gen_draft;

/* A drafter that keeps state across replies (an MTP block's model and
 * cache, a draft model's session), bound to one target session. */
typedef struct sl_draft_src sl_draft_src;

/* The MTP drafter of session s: loads the first MTP block of s's model
 * file (resident, as a model of one layer with its own cache, mp's load
 * settings but never streamed) and from then on fills the block's cache
 * from every batch s evaluates (sl_session_eval and sl_session_eval_multi).
 * Fails with SL_EUNSUPPORTED when the file has no MTP block or the family's
 * residual stream is not one row a token (deepseek4), else as
 * sl_model_load and sl_session_create. s must outlive it. */
int sl_draft_mtp_create(sl_draft_src **out, sl_session *s, const sl_model_params *mp,
                        sl_err *err);

/* The MTP block loaded once for several drafters (the server's slots): as
 * sl_draft_mtp_create loads it, for sessions on s's model (running on its
 * compute pool). Each sl_draft_mtp_create_on then makes a drafter of one
 * session with a cache of its own; the block is read only by them, so
 * drafters on different threads may share it. Free it with
 * sl_draft_mtp_block_free after its drafters; s's model must outlive it. */
int sl_draft_mtp_block_load(sl_model **out, const sl_session *s, const sl_model_params *mp,
                            sl_err *err);
int sl_draft_mtp_create_on(sl_draft_src **out, sl_session *s, sl_model *block, sl_err *err);
void sl_draft_mtp_block_free(sl_model *block);

/* The draft-model drafter of session s: loads the model at path (mp's
 * settings) with a session of s's context. Fails with SL_EINVAL when its
 * vocabulary (size or any token's text) differs from s's model's, else as
 * sl_model_load and sl_session_create. s must outlive it. */
int sl_draft_model_create(sl_draft_src **out, sl_session *s, const char *path,
                          const sl_model_params *mp, sl_err *err);

/* The draft model loaded once for several drafters (the server's slots):
 * loaded and checked as sl_draft_model_create does, against s's model.
 * Each sl_draft_model_create_on then makes a drafter of one session with
 * a session of its own on dm; drafters on different threads may share dm
 * (as sessions share a model). Free dm with sl_model_free after its
 * drafters. */
int sl_draft_model_load(sl_model **out, const sl_session *s, const char *path,
                        const sl_model_params *mp, sl_err *err);
int sl_draft_model_create_on(sl_draft_src **out, sl_session *s, sl_model *dm, sl_err *err);

/* The memory a drafter will keep, for sl_model_params.drafter_bytes:
 * draft_path NULL: the first MTP block of the model at model_path, else
 * the draft model at draft_path; its weights, and n_seqs sessions of
 * n_ctx positions taking batches of n_batch (each target session its
 * own), caching K and V as type_k / type_v (the target's: its drafter's
 * sessions follow it). Reads the file's description only (no weights).
 * Fails as loading the block or the model would (SL_EUNSUPPORTED: no MTP
 * block; SL_EINVAL: a cache type a layer cannot take). */
int sl_draft_plan_bytes(const char *model_path, const char *draft_path, int n_ctx, int n_batch,
                        int n_seqs, sl_kv_type type_k, sl_kv_type type_v, uint64_t *out,
                        sl_err *err);

/* Frees a drafter (NULL: nothing). Its target session is left as it is. */
void sl_draft_src_free(sl_draft_src *d);

#define SL_GEN_MAX_DRAFT 32     /* tokens drafted at most a step */

typedef struct sl_gen_params {
    sl_sampling *sampler;          /* required, borrowed: sees every taken token
                                      (sl_sampling_accept); the caller records the
                                      prompt's tokens in it */
    int max_tokens;                /* < 0: no limit */
    const char *const *stop_texts; /* NULL-terminated (or NULL), copied; 1..64 bytes each */
    const sl_chat *chat;           /* non-NULL: its end-of-turn tokens stop (not only the
                                      model's end-of-generation ones) and its stop
                                      markers are stop texts too */
    bool ignore_eog;               /* no token stops, and the chat's markers do not */
    int logprobs;                  /* < 0: none; 0..20: each token's, with that many
                                      alternatives */
    unsigned detok_flags;          /* SL_DETOK_* of the text (SL_DETOK_SPECIAL: control
                                      tokens as their text, for harmony's channels) */
    /* Speculative decoding: after a taken token, up to draft_max guessed
     * tokens are pending with it; the caller evaluates all of them in ONE
     * batch (the session keeping n_logit_rows >= their count), and the next
     * step samples row by row, keeping each drafted token the sampler itself
     * picks, and cuts the session back after the last one kept. The sampler
     * draws once per taken token as without drafting, so the reply is the
     * same bits with any sampler and any draft; only the speed changes. */
    sl_gen_draft draft;            /* SL_GEN_DRAFT_NONE (default): off */
    int draft_max;                 /* tokens drafted at most a step (<= SL_GEN_MAX_DRAFT,
                                      and n_logit_rows - 1) */
    int draft_min;                 /* fewer proposed: none drafted */
    int draft_ngram;               /* NGRAM: longest suffix looked up; <= 0: 3 */
    sl_draft_src *draft_src;       /* MTP, MODEL: the drafter, made for this session;
                                      it must outlive the generator */
    bool draft_always;             /* verify every guess, with the length following
                                      the last draft's outcome only; false: draft only
                                      while the measured step times and acceptance say
                                      it beats plain decoding (measured on this session
                                      across its replies with this drafter) */
    bool draft_sampling;           /* speculative sampling: each token drawn with the
                                      drafter's guess for it first (kept with its
                                      probability, else a draw from the rest), drafted
                                      or not: the same distribution and reproducible
                                      with a seed, but not the text of a run without
                                      drafting. Greedy: no difference */
    const int32_t *context;        /* the tokens already in the session (the prompt),
                                      copied: what prompt lookup searches besides the
                                      reply; NULL: the reply only */
    int n_context;
} sl_gen_params;

sl_gen_params sl_gen_default_params(void);

/* One step's result, owned by the generator until its next call. */
typedef struct sl_gen_event {
    const int32_t *ids;            /* the tokens taken this step (0 or more) */
    int n_ids;
    const sl_gen_logprob *logprobs; /* one per id when asked for, else NULL */
    const char *text;              /* whole UTF-8 characters released this step */
    size_t len;
    sl_gen_stop stop;              /* SL_GEN_GOING until the last event */
    int stop_text;                 /* SL_GEN_STOP_TEXT: index into params.stop_texts,
                                      -1 for one of the chat's markers; else -1 */
} sl_gen_event;

/* A generator of one reply on s (which must hold at least one evaluated
 * token, and outlive it). SL_EINVAL (no sampler, more than
 * SL_GEN_MAX_STOPS stop texts, an empty or too long one, logprobs > 20,
 * draft_max outside [0, SL_GEN_MAX_DRAFT]), SL_ENOMEM. Drafting is off (and
 * sl_gen_draft_stats_get says why) when the session cannot go back to a
 * drafted position (recurrent layers) or keeps one row of logits. */
int sl_gen_create(sl_gen **out, sl_session *s, const sl_gen_params *p, sl_err *err);
void sl_gen_free(sl_gen *g);

/* The tokens taken and not yet evaluated (*ids owned by g; 0: none). */
int sl_gen_pending(const sl_gen *g, const int32_t **ids);
/* The caller evaluated the first n pending tokens on the session. */
void sl_gen_evaluated(sl_gen *g, int n);
/* The next event (nothing pending: else SL_EINVAL). After the event that
 * stops, SL_EINVAL. Errors: the sampler's (non-finite logits), the
 * decoder's, SL_ENOMEM. */
int sl_gen_next(sl_gen *g, sl_gen_event *ev, sl_err *err);
/* Evaluates what is pending (sl_session_eval), then sl_gen_next. */
int sl_gen_step(sl_gen *g, sl_gen_event *ev, sl_err *err);
/* The next event stops the reply (SL_GEN_CANCELLED) once what is pending
 * is evaluated. Same thread as the steps. */
void sl_gen_cancel(sl_gen *g);
/* Tokens taken so far. */
int sl_gen_n_taken(const sl_gen *g);

/* What drafting did in this reply. */
typedef struct sl_gen_draft_stats {
    long drafted;        /* tokens drafted (evaluated as guesses) */
    long accepted;       /* of them, confirmed and taken */
    long verify_steps;   /* evaluations that carried drafts */
    long steps;          /* evaluations in all (taken tokens pending) */
    long drafted_at[SL_GEN_MAX_DRAFT];  /* drafts at position i + 1 of their step */
    long accepted_at[SL_GEN_MAX_DRAFT]; /* of them, held */
    long switched_off;   /* times drafting stopped paying and was switched off */
    long probes;         /* times the drafter guessed without a verify (to learn
                            whether guesses hold while drafting is off) */
    /* Timed steps (from a step's tokens handed out to the next sl_gen_next:
     * the caller's evaluation and whatever else it did in between). */
    long plain_timed;    /* one-token steps */
    double plain_s;
    long verify_timed;   /* steps that verified drafts */
    long verify_tokens_timed; /* tokens those steps took */
    double verify_s;
    const char *off;     /* drafting asked for but off: why (a static string); else NULL */
} sl_gen_draft_stats;
void sl_gen_draft_stats_get(const sl_gen *g, sl_gen_draft_stats *st);

/* ---- chat templates -------------------------------------------------------- */

/* Chat prompt formats recognised from the model's tokenizer.chat_template
 * (no Jinja engine: known families are rendered by hand): "chatml",
 * "qwen3", "qwen3.5", "llama3", "mistral", "mistral-v3", "tulu", "harmony",
 * "deepseek-v3", "deepseek-v3.1", "deepseek-r1", "kimi-k2",
 * "kimi-k2-thinking", "glm4", "glm4.7", "gemma4", and "plain" for templates not
 * recognised. */
typedef struct sl_chat sl_chat;

typedef struct sl_chat_message {
    const char *role;    /* "system", "user" or "assistant" */
    const char *content;
} sl_chat_message;

/* Builds m's chat template (m must outlive it). name overrides detection
 * (one of the names above; NULL detects). enable_thinking is Qwen3's
 * switch (false: the generation prompt closes an empty <think> block).
 * The BOS text is written by the template only when the tokenizer does not
 * add BOS itself: tokenize the first render with SL_TOKENIZE_ADD_BOS iff
 * sl_model_add_bos(m), always with SL_TOKENIZE_PARSE_SPECIAL. SL_EINVAL
 * for an unknown name (listing the valid ones), SL_ENOMEM. */
int sl_chat_create(sl_chat **out, const sl_model *m, const char *name, bool enable_thinking,
                   sl_err *err);
void sl_chat_free(sl_chat *c);

/* Family name in use, e.g. "chatml". */
const char *sl_chat_name(const sl_chat *c);
/* Why the file's chat template was not recognised (the plain format is used
 * instead), escaped for a terminal; NULL when it was. Owned by c. */
const char *sl_chat_warning(const sl_chat *c);

/* Renders a whole conversation; with add_generation_prompt it ends where
 * the assistant's reply begins. *out is a NUL-terminated string the caller
 * frees with free(). SL_EINVAL for an unknown role or a system message the
 * format does not allow there; SL_ENOMEM. */
int sl_chat_format(const sl_chat *c, const sl_chat_message *msgs, size_t n,
                   bool add_generation_prompt, char **out, sl_err *err);

/* For a multi-turn chat that keeps its KV cache: renders only what follows
 * an assistant reply already evaluated (its end-of-turn marker, msgs, the
 * generation prompt), so that the tokens evaluated so far stay valid.
 * Tokenize it without SL_TOKENIZE_ADD_BOS. Same ownership and errors as
 * sl_chat_format. */
int sl_chat_format_next(const sl_chat *c, const sl_chat_message *msgs, size_t n,
                        bool add_generation_prompt, char **out, sl_err *err);

/* Whether generating id ends the assistant's turn in this format: an
 * end-of-generation token of the model, or a token whose text is one of the
 * format's stop markers. */
bool sl_chat_is_stop_token(const sl_chat *c, int32_t id);

/* The format's stop markers as text, NULL-terminated, owned by c (e.g.
 * "<|im_end|>", or plain's "\nUser:"). A marker that is not a single token
 * can only be caught in the decoded text: a front-end holds back output
 * that could be the start of one and ends the answer when one appears. */
const char *const *sl_chat_stop_texts(const sl_chat *c);

/* ---- lossy routing knobs ------------------------------------------------ */

/* What the lossy knobs (sl_model_params.n_expert_used, cache_route_*) cost
 * since load, against the choice the exact run would have made from the
 * same router output (or replayed trace). */
typedef struct sl_knob_stats {
    bool active;              /* a knob is set */
    int n_expert_used;        /* experts per token now (the file's when not lowered) */
    int file_top_k;           /* the file's top-k (first routed layer) */
    int cache_route_keep, cache_route_from; /* J, M; M == 0: off */
    uint64_t routings;        /* (token, layer) choices made */
    uint64_t choices;         /* (token, layer, rank) choices of the exact run */
    uint64_t changed;         /* of those, not made (dropped or replaced) */
    uint64_t substituted;     /* experts taken instead of a better-ranked one
                                 because they were cached */
    double weight_kept;       /* mean share of the exact run's routing weight
                                 carried by the chosen experts (1 when nothing ran) */
} sl_knob_stats;

void sl_model_knob_stats(const sl_model *m, sl_knob_stats *out);

/* ---- load ---------------------------------------------------------------- */

/* How the resident weights were read at load. */
typedef struct sl_load_stats {
    uint64_t bytes;           /* bytes read from the files (whole windows) */
    double seconds;           /* wall time of the reads */
    char mode[96];            /* e.g. "direct, pread x4, huge pages" */
} sl_load_stats;

void sl_model_load_stats(const sl_model *m, sl_load_stats *out);

/* ---- the runtime: what a caller sets after load ---------------------------
 * A loaded model is immutable; what changes while it runs (the expert
 * streamer's cache, replay and read-ahead, the drive rate, the usage
 * history) lives in a runtime its sessions share. Each setter takes the
 * runtime's lock, so it is safe beside sessions evaluating on other
 * threads, and each fails with SL_EUNSUPPORTED when the model's experts
 * are all resident (sl_stream_stats.streaming false). */

/* The expert cache's eviction policy by name ("lru", "lfu", "slru",
 * "layer"). Only before the first expert is read (SL_EINVAL), and
 * SL_EINVAL for an unknown name. */
int sl_model_set_cache_policy(sl_model *m, const char *name, sl_err *err);

/* Replays the expert choices recorded in the route trace file at path
 * (format `# route_trace v1`) instead of the routers', from its first step,
 * wrapping past its end. Fails on a malformed file (SL_EFORMAT) or one that
 * does not fit the model: its layers, experts, top-k, and room for the
 * cache-route candidates when sl_model_params.cache_route_from is set
 * (SL_EINVAL; the message names what). */
int sl_model_set_route_trace(sl_model *m, const char *path, sl_err *err);

/* The drive's rate for the stats' bound, taken from elsewhere (a kept
 * `sluice iobench --expert` result): bytes_per_s > 0 (else SL_EINVAL). */
int sl_model_set_drive_rate(sl_model *m, double bytes_per_s, sl_err *err);

/* Measures the drive's rate as the streamer reads it (whole experts on
 * every lane, into free slots that stay free) until min_bytes have landed
 * or max_s have passed; *bytes_per_s gets it. Only before the first expert
 * is read (SL_EINVAL); SL_EIO when a read fails. */
int sl_model_calibrate_drive(sl_model *m, uint64_t min_bytes, double max_s, double *bytes_per_s,
                             sl_err *err);

/* Keeps an expert usage history (every expert a layer asks for adds a
 * use) for the warm start: loaded from path for model_id (each score times
 * decay, 0 < decay <= 1; a missing file is an empty history, *found false),
 * and with preload and a history found, its hottest experts are read ahead
 * into free cache slots in the background. A damaged or foreign file fails
 * (SL_EFORMAT, the message names it) and an empty history is kept instead;
 * the next save replaces a damaged history (never a file of another kind). */
int sl_model_usage_start(sl_model *m, const char *path, const char *model_id, double decay,
                         bool preload, bool *found, sl_err *err);

/* Saves the usage history to path crash-safe (the directory must exist);
 * nothing when none is kept. SL_EIO naming the file; the old file is then
 * untouched. */
int sl_model_usage_save(sl_model *m, const char *path, sl_err *err);

/* ---- batches across sessions (continuous batching) ---------------------- */

/* The most sessions one sl_session_eval_multi call takes. */
#define SL_MULTI_MAX 64

/* Whether sl_session_eval_multi can run m: no lossy routing knob, no
 * hyper-connection layer, and no --route-trace replay (with one, it runs
 * only members that replay on their own: sl_session_set_route_step). */
bool sl_model_multi_ok(const sl_model *m);

/* Under --route-trace (a streamed model replaying a recorded expert
 * choice): from now on session s replays the trace on its own, its next
 * token taking step `step` (modulo the trace's length) and each later one
 * the next step, instead of the trace's cursor shared by every session.
 * Several sessions replaying from different steps model several users of
 * the recorded model, and may be batched (sl_session_eval_multi). step -1
 * returns s to the shared cursor. Fails (SL_EINVAL) when the model replays
 * no trace or step < -1; changes nothing then. */
int sl_session_set_route_step(sl_session *s, int64_t step, sl_err *err);

/* Evaluates, in one forward pass, the n[i] tokens toks[i] appended to
 * session ss[i], for every i < count (count <= SL_MULTI_MAX): each member's
 * mixers run on its own tokens and state (positions, K/V rows, recurrent
 * state) in that session, and the FFN and the lm head run on the rows of
 * all members together in `batch`, so each routed expert is read once per
 * step for all of them. batch is a scratch session of the same model
 * created with all_logits and n_batch_max >= the step's total tokens (its
 * own K/V is never used: n_ctx 1 will do); the members are distinct, not
 * batch, without all_logits. The caller owns every session; none may be
 * used by another thread meanwhile. Afterwards each member is as after
 * sl_session_eval(ss[i], toks[i], n[i]): n_past advanced, the logits of
 * its last min(n[i], n_logit_rows) tokens (a token and its drafts to
 * verify), bit for bit the same. Fails (SL_EINVAL) on any check
 * sl_session_eval makes for a member, a batch too large, or a model that
 * cannot (sl_model_multi_ok), changing nothing; on an engine error (a
 * streamed expert unreadable, non-finite values) no member's n_past moves. */
int sl_session_eval_multi(sl_session *batch, sl_session *const *ss, const int32_t *const *toks,
                          const int *n, int count, sl_err *err);

/* ---- chat turns, tools and answers (what the server renders and parses) ----
 * A conversation with reasoning, tool calls and tool results rendered by the
 * model's template family, and a generated answer split into reasoning,
 * content and tool calls as it streams. */

typedef enum sl_chat_family {
    SL_CHAT_PLAIN = 0,
    SL_CHAT_CHATML,
    SL_CHAT_QWEN3,
    SL_CHAT_LLAMA3,
    SL_CHAT_MISTRAL,
    SL_CHAT_MISTRAL_V3,
    SL_CHAT_TULU,
    SL_CHAT_HARMONY,
    SL_CHAT_QWEN35,
    SL_CHAT_DEEPSEEK_V3,
    SL_CHAT_DEEPSEEK_V31,
    SL_CHAT_DEEPSEEK_R1,
    SL_CHAT_KIMI,
    SL_CHAT_KIMI_THINKING,
    SL_CHAT_GLM4,
    SL_CHAT_GLM47,
    SL_CHAT_GEMMA4,
} sl_chat_family;

/* The family c renders (see the names above). */
sl_chat_family sl_chat_family_of(const sl_chat *c);

/* Name of a family ("chatml", "qwen3", "llama3", "mistral", "mistral-v3",
 * "tulu", "harmony", "qwen3.5", "deepseek-v3", "deepseek-v3.1",
 * "deepseek-r1", "kimi-k2", "kimi-k2-thinking", "glm4", "glm4.7", "gemma4", "plain"). */
const char *sl_chat_family_name(sl_chat_family f);

/* Whether c's family can declare tools and render tool calls. */
bool sl_chat_takes_tools(const sl_chat *c);

/* Whether c's generation prompt opens a <think> block itself (a
 * thinking-only Qwen3-style template). */
bool sl_chat_think_prefix(const sl_chat *c);

/* Sets the harmony reasoning effort c renders by default (low, medium or
 * high; other families have none); SL_EINVAL naming the value otherwise.
 * Not while another thread renders with c. */
int sl_chat_set_effort(sl_chat *c, const char *effort, sl_err *err);

/* One message with everything a template may render: the role ("system",
 * "developer", "user", "assistant" or "tool"), its text, and optionally an
 * assistant's reasoning and tool calls, or the name of the function whose
 * result a tool message carries. Strings are borrowed for the call;
 * absent ones are NULL (content "" for none). */
typedef struct sl_chat_tool_call {
    const char *id;        /* may be NULL */
    const char *name;
    const char *arguments; /* JSON text of the arguments object */
} sl_chat_tool_call;

typedef struct sl_chat_turn {
    const char *role;
    const char *content;
    const char *reasoning;                /* assistant; NULL: none */
    const sl_chat_tool_call *tool_calls;  /* assistant */
    size_t n_tool_calls;
    const char *name;                     /* tool: the function's name */
} sl_chat_turn;

/* Renders turns[0..n) with the function tools of tools_json (NULL: none;
 * else the JSON text of an OpenAI "tools" array) in c's family, the
 * generation prompt at the end when add_generation_prompt. thinking < 0
 * keeps c's switch (sl_chat_create), 0 or 1 sets it for this render;
 * effort NULL keeps c's (sl_chat_set_effort). *out is a NUL-terminated
 * string the caller frees with free(). SL_EINVAL for tools or tool
 * messages in a family that has no form for them, a tools text that is not
 * such an array, an unknown effort or a message the family cannot place;
 * SL_ENOMEM. */
int sl_chat_format_turns(const sl_chat *c, const sl_chat_turn *turns, size_t n,
                         const char *tools_json, int thinking, const char *effort,
                         bool add_generation_prompt, char **out, sl_err *err);

/* An answer split as it streams (sl_answer_create): reasoning and content
 * go to the caller's function as they are known, tool calls are
 * collected. harmony's channels (analysis: reasoning; final and preambles:
 * content; commentary to functions.NAME: a call), or a thinking model's
 * <think> block with Qwen3-style <tool_call> JSON (or Qwen3.5's XML form)
 * in the content when the request declared tools. */
typedef struct sl_answer sl_answer;

/* Receives each run of an answer's text with whether it is reasoning. */
typedef void (*sl_answer_out)(void *ud, bool reasoning, const char *text, size_t len);

/* A tool call found in an answer: the function's name and the compact JSON
 * text of its arguments (owned by the answer). */
typedef struct sl_answer_call {
    char *name;
    char *arguments;
} sl_answer_call;

/* Whether an answer to prompt (len bytes: the template's own rendering,
 * without a forced call's opening) keeps its reasoning in a <think> block
 * to split off: the prompt leaves one open (*inside: the answer starts as
 * reasoning), or the family opens one itself (Qwen3). */
bool sl_answer_thinks(sl_chat_family family, const char *prompt, size_t len, bool *inside);

/* A new parser in *a: harmony: the template is harmony; think_enabled: the
 * template knows thinking; think_inside: the answer starts inside a <think>
 * block; tools: the request declared tools (parse <tool_call>). out (with
 * ud) receives reasoning and content. SL_ENOMEM. Free with sl_answer_free. */
int sl_answer_create(sl_answer **a, bool harmony, bool think_enabled, bool think_inside,
                     bool tools, sl_answer_out out, void *ud);
/* The next len bytes of the answer (whole UTF-8 characters or not). */
void sl_answer_feed(sl_answer *a, const char *text, size_t len);
/* At the end: held text goes out; the calls are then complete. */
void sl_answer_finish(sl_answer *a);
/* The calls found so far, *n of them (owned by a). */
const sl_answer_call *sl_answer_calls(const sl_answer *a, int *n);
void sl_answer_free(sl_answer *a);

/* A whole answer's text split: [0] content, [1] reasoning (each malloc'd,
 * NUL-terminated, NULL when empty); oom when a part could not grow. */
typedef struct sl_answer_text {
    char *p[2];
    size_t n[2];
    bool oom;
} sl_answer_text;

/* Runs a whole answer (prime, may be NULL, then text[0..len)) through a
 * new parser (the flags as sl_answer_create's) into *out, and returns the
 * parser for its calls (sl_answer_calls), or NULL when out of memory
 * (*out then empty, oom set). The caller frees both (sl_answer_free,
 * sl_answer_text_free). */
sl_answer *sl_answer_whole(sl_answer_text *out, bool harmony, bool think_enabled,
                           bool think_inside, bool tools, const char *prime, const char *text,
                           size_t len);
void sl_answer_text_free(sl_answer_text *t);

/* ---- the model file's metadata (what a front-end shows of the file) ------- */

typedef enum sl_meta_kind {
    SL_META_OTHER = 0,   /* an array: no value given */
    SL_META_UINT,        /* u: any unsigned integer type, widened */
    SL_META_INT,         /* i: any signed integer type, widened */
    SL_META_FLOAT,       /* f: float32 or float64, widened */
    SL_META_BOOL,        /* b */
    SL_META_STRING,      /* str: len bytes as in the file, NUL-terminated (UTF-8
                            unchecked) */
} sl_meta_kind;

typedef struct sl_meta_value {
    sl_meta_kind kind;
    uint64_t u;
    int64_t i;
    double f;
    bool b;
    const char *str;
    size_t len;
} sl_meta_value;

/* The number of key/value pairs in m's file header. */
uint64_t sl_model_meta_count(const sl_model *m);

/* The i-th pair: its key (NUL-terminated) and value, both owned by m; false
 * when i is out of range. */
bool sl_model_meta_at(const sl_model *m, uint64_t i, const char **key, sl_meta_value *v);

/* The value under key; false when the file has no such key. */
bool sl_model_meta_get(const sl_model *m, const char *key, sl_meta_value *v);

/* The file's totals: bytes (all its split parts), tensors, and parameters
 * (the elements of every tensor). */
void sl_model_file_totals(const sl_model *m, uint64_t *bytes, uint64_t *n_tensors,
                          uint64_t *n_params);

/* ---- for front-ends: the clock, errors and platform facts ------------------
 * The few helpers of the library's own that the CLI and the server
 * (app/server/, which includes no header under src/) use as well. */

/* Nanoseconds from an arbitrary fixed point (a monotonic clock). */
uint64_t sl_now_ns(void);

/* Fills err (if non-NULL) with code and a printf-style message; returns code
 * so callers can write `return sl_err_set(err, SL_EFORMAT, "...")`. The
 * message is stored escaped: control bytes, C1 controls and invalid UTF-8 in
 * it, e.g. from a file's strings, become "\xNN", so an error never carries a
 * terminal escape sequence. Cut to SL_ERR_MSG_MAX - 1 bytes on a UTF-8
 * boundary. */
int sl_err_set(sl_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Removes path, ignoring errors (cleanup of a temporary file). */
void sl_file_remove(const char *path);

/* Resident set size of this process now and at its peak, bytes; false when
 * the platform cannot say. */
bool sl_mem_rss(uint64_t *rss, uint64_t *peak);

/* Raises the soft open-file limit to want (never above the hard limit,
 * never lowering it) and returns the soft limit now in force; UINT64_MAX
 * when unlimited or the platform cannot say. Cannot fail: a refused raise
 * leaves the old limit, which is returned. */
uint64_t sl_fd_limit_raise(uint64_t want);

/* A connected socket, wide enough for a POSIX descriptor and a winsock
 * SOCKET alike (what libmicrohttpd's MHD_socket is on either). The server
 * writes an early 413 straight to a connection's socket and shuts sockets
 * (never closes them: libmicrohttpd does) to end a connection that sends
 * its request head too slowly (src/util/sock.c, sock_win.c). */
typedef intptr_t sl_sock;

/* Writes all len bytes of buf to the connected socket s, which may be
 * non-blocking: waits up to a second at a time for room. Never raises
 * SIGPIPE. False when the peer is gone, the socket fails or stalls. */
bool sl_sock_send_all(sl_sock s, const void *buf, size_t len);

/* Shuts the sending side of s (the peer reads the end of the stream). */
void sl_sock_shut_send(sl_sock s);

/* Shuts both directions of s: the thread that reads it sees the end of
 * input (or an error) and its owner closes it. */
void sl_sock_shut_both(sl_sock s);

/* Holds the user's stop requests for sl_stop_signal_wait, so that a
 * long-running command (`sluice serve`) shuts down cleanly instead of
 * ending at once (POSIX: SIGINT, SIGTERM; Windows: the console's Ctrl-C,
 * Ctrl-Break and close events; src/util/stop_signal.c, stop_signal_win.c).
 * Call once, from the main thread, before starting any thread (POSIX
 * threads inherit the signal mask set here). Also ignores SIGPIPE, so a
 * client that goes away is an error on its socket, not the end. */
void sl_stop_signal_hold(void);

/* Blocks until a stop request arrives and returns its name ("SIGINT",
 * "SIGTERM"; Windows: "Ctrl-C", "Ctrl-Break", "console closed", "logoff",
 * "shutdown"), a static string. On Windows the console's close, logoff and
 * shutdown events give the process a few seconds (the system's limit) to
 * return from main. */
const char *sl_stop_signal_wait(void);

#ifdef __cplusplus
}
#endif

#endif
