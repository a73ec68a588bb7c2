/* synth_preset.c - model presets, configuration checks and file-type names.
 *
 * Owns: the table of preset dimensions and the validation of a config. Must
 * not know about tensors or files (synth_plan.c, synth_write.c do). */
#include "synth/synth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "synth/synth_vocab.h"

typedef struct preset {
    const char *name;
    const char *summary;
    uint32_t n_embd, n_layer, n_head, n_head_kv, head_dim;
    uint32_t n_ff, n_ff_exp, n_ff_shexp, n_expert, n_expert_used;
    uint32_t n_vocab, n_ctx;
    float rope_base, rms_eps;
} preset;

/* Dimensions were chosen so that:
 *  tiny     - every architecture is well under 1 MB in f32 and fast under
 *             ASan. Rows of 64/32/16 elements do not fit K-quant blocks
 *             (256), so K-quant types fall back to q8_0 here; use tiny-k.
 *  tiny-k   - every row length is a multiple of 256, so q4_k/q5_k/q6_k and
 *             q4_k_m are really exercised; about 9 MB in f32.
 *  small    - the demo: 64 experts top-8 (1/8 active like a real MoE);
 *             about 95 MB in q4_k_m. Vocabulary 1024: the trained tokenizer
 *             has ~930 real tokens, so a random model's samples are mostly
 *             text rather than <|pad_N|> tokens.
 *  mixtral-like - 8 wide experts top-2, Mixtral's proportions, small.
 *  30b-a3b  - Qwen3-30B-A3B; 1b-7b - OLMoE-1B-7B; 235b-a22b -
 *             Qwen3-235B-A22B (generate a few layers with --layers).
 *  35b-a3b  - Qwen3.6-35B-A3B (qwen35moe; its published config: 40 layers
 *             of which every 4th is full attention, 16 q heads and 2 kv
 *             heads of 256, DeltaNet 16 q/k heads and 32 v heads of 128,
 *             conv kernel 4, 256 experts of 512 top-8 plus a shared expert
 *             of 512, vocab 248320, rope base 1e7, context 262144). With
 *             another architecture it is that model's dense-attention
 *             twin (every layer full attention). */
static const preset presets[] = {
    /* name  summary
       embd layer head kv hd  ff  ff_exp ff_sh exp used vocab ctx rope eps */
    {"tiny", "unit tests: n_embd 64, 2 layers, 8 experts top-2, vocab 512 (K-quants fall back to q8_0)",
     64, 2, 4, 2, 16, 128, 32, 64, 8, 2, 512, 256, 10000.0f, 1e-6f},
    {"tiny-k", "unit tests of K-quants: n_embd 256, 2 layers, 4 experts top-2, all rows multiples of 256",
     256, 2, 4, 2, 64, 512, 256, 256, 4, 2, 512, 256, 10000.0f, 1e-6f},
    {"small", "demo: n_embd 512, 6 layers, 64 experts top-8, vocab 1024 (~95 MB in q4_k_m)",
     512, 6, 8, 2, 64, 1536, 256, 1024, 64, 8, 1024, 4096, 1000000.0f, 1e-6f},
    {"mixtral-like", "n_embd 512, 4 layers, 8 experts (ff 1792) top-2, vocab 1024",
     512, 4, 8, 2, 64, 1792, 1792, 1792, 8, 2, 1024, 4096, 1000000.0f, 1e-5f},
    {"30b-a3b", "Qwen3-30B-A3B: n_embd 2048, 48 layers, 128 experts (ff 768) top-8, vocab 151936",
     2048, 48, 32, 4, 128, 6144, 768, 3072, 128, 8, 151936, 40960, 1000000.0f, 1e-6f},
    {"1b-7b", "OLMoE-1B-7B: n_embd 2048, 16 layers, 64 experts (ff 1024) top-8, vocab 50304",
     2048, 16, 16, 16, 128, 8192, 1024, 4096, 64, 8, 50304, 4096, 10000.0f, 1e-5f},
    {"235b-a22b", "Qwen3-235B-A22B: n_embd 4096, 94 layers, 128 experts (ff 1536) top-8, vocab 151936",
     4096, 94, 64, 4, 128, 12288, 1536, 6144, 128, 8, 151936, 40960, 1000000.0f, 1e-6f},
    {"35b-a3b", "Qwen3.6-35B-A3B (qwen35moe): n_embd 2048, 40 layers, 256 experts (ff 512) top-8 + shared, vocab 248320",
     2048, 40, 16, 2, 256, 512, 512, 512, 256, 8, 248320, 262144, 10000000.0f, 1e-6f},
    /* Gemma-4-26B-A4B's published config (gemma4; synth_gemma4.c adds the
     * sliding layers: 8 K/V heads of 256, window 1024, 5 of every 6); here
     * the full layers' 2 K/V heads of 512 */
    {"26b-a4b", "Gemma-4-26B-A4B (gemma4): n_embd 2816, 30 layers, 128 experts (ff 704) top-8 + dense MLP 2112, vocab 262144",
     2816, 30, 16, 2, 512, 2112, 704, 0, 128, 8, 262144, 262144, 1000000.0f, 1e-6f},
    /* gpt-oss-20b / -120b's published config (synth_gptoss.c adds the
     * window: 128 tokens on the even layers); with another architecture
     * they are those shapes' twins */
    {"20b", "gpt-oss-20b (gpt-oss): n_embd 2880, 24 layers, 32 experts (ff 2880) top-4, vocab 201088",
     2880, 24, 64, 8, 64, 2880, 2880, 0, 32, 4, 201088, 131072, 150000.0f, 1e-5f},
    {"120b", "gpt-oss-120b (gpt-oss): n_embd 2880, 36 layers, 128 experts (ff 2880) top-4, vocab 201088",
     2880, 36, 64, 8, 64, 2880, 2880, 0, 128, 4, 201088, 131072, 150000.0f, 1e-5f},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

/* What qwen35moe adds to a preset: its layer count (the hybrid needs
 * several layers for both kinds to appear), the full-attention interval and
 * the gated-DeltaNet shape. Chosen so that nv * ds (the width of attn_gate,
 * ssm_out's rows) is a multiple of 256 wherever the preset's other rows
 * are (tiny-k: every K-quant really used), and nk divides nv. */
typedef struct hybrid_preset {
    const char *name;
    uint32_t n_layer, interval, conv_kernel, state, groups, v_heads;
} hybrid_preset;

static const hybrid_preset hybrid_presets[] = {
    /* name        layers interval K  ds   nk  nv */
    {"tiny",          4, 2, 4, 16, 2, 4},   /* layers 0,2 DeltaNet; 1,3 full */
    {"tiny-k",        4, 2, 4, 64, 2, 4},   /* nv*ds = 256 */
    {"small",         8, 4, 4, 64, 4, 8},
    {"mixtral-like",  4, 4, 4, 64, 4, 8},
    {"30b-a3b",      48, 4, 4, 128, 16, 32},
    {"1b-7b",        16, 4, 4, 128, 8, 16},
    {"235b-a22b",    94, 4, 4, 128, 16, 64},
    {"35b-a3b",      40, 4, 4, 128, 16, 32},
};

size_t sl_synth_preset_count(void) { return N_PRESETS; }

const char *sl_synth_preset_name(size_t i)
{
    return i < N_PRESETS ? presets[i].name : NULL;
}

const char *sl_synth_preset_summary(size_t i)
{
    return i < N_PRESETS ? presets[i].summary : NULL;
}

typedef struct arch_entry {
    const char *cli;    /* name accepted on the command line */
    const char *arch;   /* general.architecture written */
    bool moe, shared;
} arch_entry;

static const arch_entry archs[] = {
    {"qwen3moe", "qwen3moe", true, false},
    {"qwen2moe", "qwen2moe", true, true},
    {"mixtral", "llama", true, false},
    {"olmoe", "olmoe", true, false},
    {"llama", "llama", false, false},
    {"qwen3", "qwen3", false, false},
    {"qwen2", "qwen2", false, false},
    {"qwen35moe", "qwen35moe", true, true},
    {"gemma4", "gemma4", true, false},
    {"gpt-oss", "gpt-oss", true, false},
};

const char *sl_synth_arch_list(void)
{
    return "qwen3moe, qwen2moe, mixtral (llama with experts), olmoe, llama, qwen3, qwen2, "
           "qwen35moe (hybrid gated DeltaNet + gated attention), gemma4 (Gemma 4 MoE), "
           "gpt-oss (sinks, sliding windows, biases)";
}

static const char *const type_names[SL_SYNTH_TYPE_COUNT] = {
    "f32", "f16", "q8_0", "q4_0", "q4_k_m", "q4_k", "q5_k", "q6_k", "mxfp4", "iq4_xs",
};

const char *sl_synth_type_name(sl_synth_type t)
{
    return (unsigned)t < SL_SYNTH_TYPE_COUNT ? type_names[t] : "unknown";
}

bool sl_synth_type_from_name(const char *name, sl_synth_type *out)
{
    if (!name) return false;
    for (int i = 0; i < SL_SYNTH_TYPE_COUNT; i++) {
        if (!strcasecmp(name, type_names[i])) {
            *out = (sl_synth_type)i;
            return true;
        }
    }
    return false;
}

uint32_t sl_synth_file_type(sl_synth_type t)
{
    /* llama.cpp's llama_ftype: ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q4_0 2,
     * MOSTLY_Q8_0 7, MOSTLY_Q4_K_S 14, MOSTLY_Q4_K_M 15, MOSTLY_Q5_K_S 16,
     * MOSTLY_Q6_K 18, MOSTLY_IQ4_XS 30, MOSTLY_MXFP4_MOE 38. Uniform K types
     * are reported as the _S variants. */
    switch (t) {
    case SL_SYNTH_F32: return 0;
    case SL_SYNTH_F16: return 1;
    case SL_SYNTH_Q4_0: return 2;
    case SL_SYNTH_Q8_0: return 7;
    case SL_SYNTH_Q4_K: return 14;
    case SL_SYNTH_Q4_K_M: return 15;
    case SL_SYNTH_Q5_K: return 16;
    case SL_SYNTH_Q6_K: return 18;
    case SL_SYNTH_MXFP4: return 38;
    case SL_SYNTH_IQ4_XS: return 30;
    default: return 0;
    }
}

int sl_synth_config_init(sl_synth_config *c, const char *arch, const char *preset_name,
                         sl_err *err)
{
    memset(c, 0, sizeof *c);
    const arch_entry *a = NULL;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (arch && !strcmp(arch, archs[i].cli)) a = &archs[i];
    if (!a)
        return sl_err_set(err, SL_EINVAL, "unknown architecture '%s' (known: %s)",
                          arch ? arch : "(none)", sl_synth_arch_list());
    const preset *p = NULL;
    for (size_t i = 0; i < N_PRESETS; i++)
        if (preset_name && !strcmp(preset_name, presets[i].name)) p = &presets[i];
    if (!p) {
        char list[256] = "";
        for (size_t i = 0; i < N_PRESETS; i++) {
            if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
            strncat(list, presets[i].name, sizeof list - strlen(list) - 1);
        }
        return sl_err_set(err, SL_EINVAL, "unknown preset '%s' (known: %s)",
                          preset_name ? preset_name : "(none)", list);
    }
    snprintf(c->arch, sizeof c->arch, "%s", a->arch);
    snprintf(c->preset, sizeof c->preset, "%s", p->name);
    c->moe = a->moe;
    c->shared_expert = a->shared;
    c->n_layer = p->n_layer;
    c->n_embd = p->n_embd;
    c->n_head = p->n_head;
    /* OLMoE has no grouped-query attention, and llama.cpp sizes its k norm
     * by n_embd = n_head * head_dim, so only kv = heads loads there. */
    c->n_head_kv = strcmp(a->arch, "olmoe") ? p->n_head_kv : p->n_head;
    c->head_dim = p->head_dim;
    c->n_ff = p->n_ff;
    c->n_ff_exp = p->n_ff_exp;
    c->n_ff_shexp = p->n_ff_shexp;
    c->n_expert = a->moe ? p->n_expert : 0;
    c->n_expert_used = a->moe ? p->n_expert_used : 0;
    c->n_vocab = p->n_vocab;
    c->n_ctx = p->n_ctx;
    c->rope_base = p->rope_base;
    c->rms_eps = p->rms_eps;
    c->type = SL_SYNTH_F32;
    c->seed = 1;
    c->threads = 1;
    if (!strcmp(a->arch, "qwen35moe")) {
        const hybrid_preset *h = NULL;
        for (size_t i = 0; i < sizeof hybrid_presets / sizeof hybrid_presets[0]; i++)
            if (!strcmp(p->name, hybrid_presets[i].name)) h = &hybrid_presets[i];
        if (!h)
            return sl_err_set(err, SL_EINVAL, "preset '%s' has no qwen35moe shape", p->name);
        c->n_layer = h->n_layer;
        c->full_attn_interval = h->interval;
        c->ssm_conv_kernel = h->conv_kernel;
        c->ssm_state = h->state;
        c->ssm_groups = h->groups;
        c->ssm_v_heads = h->v_heads;
        c->rope_dim = p->head_dim / 4; /* partial_rotary_factor 0.25 */
    }
    if (!strcmp(a->arch, "gemma4")) return sl_synth_gemma4_init(c, err);
    if (!strcmp(a->arch, "gpt-oss")) return sl_synth_gptoss_init(c, err);
    return SL_OK;
}

void sl_synth_rope_sections(const sl_synth_config *c, int32_t out[4])
{
    /* The converter's default [11, 11, 10, 0] is for 32 rotated pairs;
     * scaled to n_rot/2 pairs (t and h rounded, w the rest rounded down),
     * which gives [3, 3, 2, 0] for 8 pairs, as the reference fixture has. */
    int32_t pairs = (int32_t)((c->rope_dim ? c->rope_dim : c->head_dim) / 2);
    int32_t w = pairs * 10 / 32, h = (pairs * 11 + 16) / 32;
    out[0] = pairs - h - w;
    out[1] = h;
    out[2] = w;
    out[3] = 0;
}

/* Caps keep every product below 2^63 and reject typos (e.g. --layers 48000)
 * long before a disk fills. */
#define MAX_DIM 65536u
#define MAX_LAYERS 1024u
#define MAX_EXPERTS 4096u
#define MAX_VOCAB (1u << 22)

int sl_synth_config_validate(const sl_synth_config *c, sl_err *err)
{
    bool known = false;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(c->arch, archs[i].arch)) known = true;
    if (!known)
        return sl_err_set(err, SL_EINVAL, "unknown architecture '%s'", c->arch);
    if (c->n_layer < 1 || c->n_layer > MAX_LAYERS)
        return sl_err_set(err, SL_EINVAL, "layer count %u out of range 1..%u", c->n_layer,
                          MAX_LAYERS);
    if (c->n_embd < 1 || c->n_embd > MAX_DIM || c->head_dim < 2 || c->head_dim > MAX_DIM ||
        c->n_head < 1 || c->n_head > 1024 || c->n_head_kv < 1)
        return sl_err_set(err, SL_EINVAL,
                          "dimensions out of range (n_embd %u, heads %u/%u, head_dim %u)",
                          c->n_embd, c->n_head, c->n_head_kv, c->head_dim);
    if (c->head_dim % 2)
        return sl_err_set(err, SL_EINVAL, "head_dim %u must be even for RoPE", c->head_dim);
    if (c->n_head % c->n_head_kv)
        return sl_err_set(err, SL_EINVAL, "head count %u is not a multiple of kv head count %u",
                          c->n_head, c->n_head_kv);
    if (c->n_ctx < 1)
        return sl_err_set(err, SL_EINVAL, "context length must be positive");
    if (!(c->rope_base > 0) || !(c->rms_eps > 0))
        return sl_err_set(err, SL_EINVAL, "rope base and rms epsilon must be positive");
    if (c->moe) {
        if (c->n_expert < 1 || c->n_expert > MAX_EXPERTS)
            return sl_err_set(err, SL_EINVAL, "expert count %u out of range 1..%u", c->n_expert,
                              MAX_EXPERTS);
        if (c->n_expert_used < 1 || c->n_expert_used > c->n_expert)
            return sl_err_set(err, SL_EINVAL, "top-k %u out of range 1..%u (the expert count)",
                              c->n_expert_used, c->n_expert);
        if (c->n_ff_exp < 1 || c->n_ff_exp > MAX_DIM)
            return sl_err_set(err, SL_EINVAL, "expert width %u out of range", c->n_ff_exp);
        if (c->shared_expert && (c->n_ff_shexp < 1 || c->n_ff_shexp > MAX_DIM))
            return sl_err_set(err, SL_EINVAL, "shared expert width %u out of range",
                              c->n_ff_shexp);
    } else {
        if (c->n_expert != 0)
            return sl_err_set(err, SL_EINVAL,
                              "architecture '%s' is dense here but %u experts were asked for",
                              c->arch, c->n_expert);
        if (c->n_ff < 1 || c->n_ff > MAX_DIM)
            return sl_err_set(err, SL_EINVAL, "feed-forward width %u out of range", c->n_ff);
    }
    const bool hybrid = !strcmp(c->arch, "qwen35moe");
    if (c->shared_expert && strcmp(c->arch, "qwen2moe") && !hybrid)
        return sl_err_set(err, SL_EINVAL,
                          "a shared expert needs architecture qwen2moe or qwen35moe");
    if (hybrid) {
        if (!c->moe || !c->shared_expert)
            return sl_err_set(err, SL_EINVAL,
                              "qwen35moe needs routed experts and a shared expert");
        if (c->ssm_conv_kernel < 2 || c->ssm_conv_kernel > 16)
            return sl_err_set(err, SL_EINVAL, "ssm conv kernel %u out of range 2..16",
                              c->ssm_conv_kernel);
        if (c->ssm_state < 1 || c->ssm_state > 1024 || c->ssm_groups < 1 ||
            c->ssm_groups > 1024 || c->ssm_v_heads < 1 || c->ssm_v_heads > 4096)
            return sl_err_set(err, SL_EINVAL,
                              "ssm dimensions out of range (state %u, groups %u, v heads %u)",
                              c->ssm_state, c->ssm_groups, c->ssm_v_heads);
        if (c->ssm_v_heads % c->ssm_groups)
            return sl_err_set(err, SL_EINVAL,
                              "ssm v head count %u is not a multiple of the q/k head count %u "
                              "(v head h reads q/k head h mod %u)",
                              c->ssm_v_heads, c->ssm_groups, c->ssm_groups);
        if (c->full_attn_interval < 1)
            return sl_err_set(err, SL_EINVAL, "full attention interval must be positive");
    }
    if (!strcmp(c->arch, "gpt-oss") && c->n_layer < 2)
        return sl_err_set(err, SL_EINVAL, "gpt-oss needs at least 2 layers (a sliding and a "
                          "full one), not %u", c->n_layer);
    if (!strcmp(c->arch, "gpt-oss") && c->tied)
        return sl_err_set(err, SL_EINVAL, "gpt-oss has an untied output head (llama.cpp "
                          "requires output.weight): drop --tied");
    if (c->rope_dim > c->head_dim || c->rope_dim % 2)
        return sl_err_set(err, SL_EINVAL, "rope dimension %u must be even and at most head_dim %u",
                          c->rope_dim, c->head_dim);
    if (c->n_vocab < SL_SYNTH_VOCAB_MIN || c->n_vocab > MAX_VOCAB)
        return sl_err_set(err, SL_EINVAL,
                          "vocabulary size %u out of range %u..%u (256 byte tokens, "
                          "special tokens and at least one merge)",
                          c->n_vocab, SL_SYNTH_VOCAB_MIN, MAX_VOCAB);
    if ((unsigned)c->type >= SL_SYNTH_TYPE_COUNT)
        return sl_err_set(err, SL_EINVAL, "unknown file type %d", (int)c->type);
    if (c->threads > 64)
        return sl_err_set(err, SL_EINVAL, "thread count %u above 64", c->threads);
    return SL_OK;
}
