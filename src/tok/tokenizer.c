/* tokenizer.c - building a tokenizer from a vocabulary description, its
 * accessors, and the encode driver that runs the special-token partition
 * and hands raw fragments to the BPE or SentencePiece encoder.
 *
 * Knows the defaults and quirks llama.cpp applies while loading a
 * vocabulary (default special ids per model type, end-of-generation markers
 * recognised by their text, Phi-3's right-stripping special tokens), not the
 * GGUF format (tok_gguf.c) nor the encoders' inner workings. */
#include "tok/tok_internal.h"

#include "util/escape.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_tok_spec_init(sl_tok_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->bos = spec->eos = spec->eot = spec->eom = spec->unk = spec->pad = -1;
    spec->add_bos = spec->add_eos = spec->add_space_prefix = -1;
    spec->fim_pad = spec->fim_rep = spec->fim_sep = -1;
}

void sl_tokenizer_free(sl_tokenizer *tok)
{
    if (!tok) return;
    free(tok->tokens);
    free(tok->pool);
    free(tok->pieces);
    sl_tok_map_free(&tok->vocab);
    free(tok->merge_pool);
    sl_tok_map_free(&tok->merges);
    free(tok->pre_warning);
    free(tok->id_warning);
    sl_tok_pretok_free(&tok->pretok);
    free(tok->specials);
    sl_tok_map_free(&tok->special_map);
    free(tok->special_lens);
    free(tok);
}

static int32_t find_text(const sl_tokenizer *tok, const char *s)
{
    return sl_tok_map_get(&tok->vocab, s, strlen(s), 0);
}

/* Copies the token texts into one pool and indexes them. */
static int build_vocab(sl_tokenizer *tok, const sl_tok_spec *spec, sl_err *err)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < spec->n_tokens; i++) {
        if (!spec->tokens[i].ptr && spec->tokens[i].len)
            return sl_err_set(err, SL_EINVAL, "token %u has no text", i);
        total += (uint64_t)spec->tokens[i].len + 1;
        if (total > UINT32_MAX)
            return sl_err_set(err, SL_EFORMAT, "vocabulary texts exceed 4 GiB at token %u", i);
    }
    tok->n_tokens = spec->n_tokens;
    tok->tokens = calloc(spec->n_tokens, sizeof *tok->tokens);
    tok->pool = malloc(total ? total : 1);
    if (!tok->tokens || !tok->pool) goto nomem;
    /* token types outside 0..6 read as UNDEFINED, as llama.cpp maps them */
    uint32_t off = 0;
    for (uint32_t i = 0; i < spec->n_tokens; i++) {
        sl_tok_entry *t = &tok->tokens[i];
        t->off = off;
        t->len = (uint32_t)spec->tokens[i].len;
        if (t->len) memcpy(tok->pool + off, spec->tokens[i].ptr, t->len);
        tok->pool[off + t->len] = '\0';
        off += t->len + 1;
        t->score = spec->scores ? spec->scores[i] : 0.0f;
        int32_t ty = spec->types ? spec->types[i] : SL_TOK_TYPE_NORMAL;
        t->type = (ty >= 0 && ty <= SL_TOK_TYPE_BYTE) ? (uint8_t)ty : SL_TOK_TYPE_UNDEFINED;
    }
    if (!sl_tok_map_init(&tok->vocab, tok->pool, spec->n_tokens)) goto nomem;
    /* Duplicate texts: the first id wins (later ones are unreachable by
     * encoding but still decode). llama.cpp refuses such a vocabulary with
     * an assertion; here no lookup depends on texts being unique, so it is
     * accepted. Empty texts cannot be matched at all. */
    for (uint32_t i = 0; i < spec->n_tokens; i++)
        if (tok->tokens[i].len) sl_tok_map_put(&tok->vocab, tok->tokens[i].off, tok->tokens[i].len, 0, (int32_t)i);
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory for a %u-token vocabulary", spec->n_tokens);
}

/* Merges are "left right", split at the first space after the first byte;
 * the rank is the index. The first occurrence of a pair wins. */
static int build_merges(sl_tokenizer *tok, const sl_tok_spec *spec, sl_err *err)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < spec->n_merges; i++) {
        total += spec->merges[i].len;
        if (total > UINT32_MAX)
            return sl_err_set(err, SL_EFORMAT, "merge table exceeds 4 GiB at merge %u", i);
    }
    tok->merge_pool = malloc(total ? total : 1);
    if (!tok->merge_pool) goto nomem;
    if (!sl_tok_map_init(&tok->merges, tok->merge_pool, spec->n_merges)) goto nomem;
    uint32_t off = 0;
    for (uint32_t i = 0; i < spec->n_merges; i++) {
        const char *m = spec->merges[i].ptr;
        size_t n = spec->merges[i].len;
        const char *sp = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL;
        if (!sp) continue; /* not a pair: llama.cpp keeps it as ("",""), unusable */
        size_t left = (size_t)(sp - m), right = n - left - 1;
        memcpy(tok->merge_pool + off, m, left);
        memcpy(tok->merge_pool + off + left, sp + 1, right);
        sl_tok_map_put(&tok->merges, off, (uint32_t)(left + right), (uint32_t)left, (int32_t)i);
        off += (uint32_t)(left + right);
    }
    return SL_OK;
nomem:
    return sl_err_set(err, SL_ENOMEM, "out of memory for %u merges", spec->n_merges);
}

static int setup_pre(sl_tokenizer *tok, const char *pre, sl_err *err)
{
    /* a "gemma4" vocabulary always splits as Gemma 4 does, whatever
     * tokenizer.ggml.pre says (llama.cpp overrides the name) */
    if (tok->model == SL_TOK_MODEL_GEMMA4) pre = "gemma4";
    int set = sl_tok_pre_default_set();
    bool ignore_merges = false, add_bos = false;
    const char *name = pre ? sl_tok_pre_lookup(pre, &set, &ignore_merges, &add_bos) : NULL;
    if (!name && pre) {
        /* as llama.cpp: a name it does not know is an error, never a silent
         * fallback (the tokens would differ from the model's own). The name
         * is the file's: escaped (util/escape.h), at most 80 bytes shown. */
        char shown[84];
        size_t n = strlen(pre), used;
        sl_escape(shown, sizeof shown - 3, pre, n, &used);
        if (used < n) strcat(shown, "...");
        return sl_err_set(err, SL_EUNSUPPORTED, "unknown pre-tokenizer '%s' "
                          "(tokenizer.ggml.pre): sluice cannot split text the way this "
                          "model's tokenizer does", shown);
    }
    if (!name) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the file names no pre-tokenizer (tokenizer.ggml.pre); splitting with the "
                 "default patterns, tokens may differ from the model's own tokenizer");
        tok->pre_warning = strdup(msg);
        if (!tok->pre_warning) return sl_err_set(err, SL_ENOMEM, "out of memory");
        name = "default";
        set = sl_tok_pre_default_set();
    }
    tok->pre_set = set;
    tok->pre_name = name;
    tok->ignore_merges = ignore_merges;
    tok->add_bos = add_bos;
    tok->raw_bpe = sl_tok_pre_is_raw(set);
    return sl_tok_pretok_init(&tok->pretok, set, err);
}

/* An id from metadata overrides the default if it is in range. One outside
 * the vocabulary is ignored and the default kept, as llama.cpp does ("bad
 * special token ... using default id"), and said in tok->id_warning; a
 * warning that cannot be stored for lack of memory is dropped. */
static int32_t pick_id(sl_tokenizer *tok, const char *key, int64_t from_spec, int32_t dflt)
{
    int32_t d = (dflt >= 0 && (uint32_t)dflt < tok->n_tokens) ? dflt : SL_TOK_NONE;
    if (from_spec < 0) return d;
    if (from_spec < (int64_t)tok->n_tokens) return (int32_t)from_spec;
    char one[160], dflt_text[24] = "none";
    if (d != SL_TOK_NONE) snprintf(dflt_text, sizeof dflt_text, "%d", (int)d);
    snprintf(one, sizeof one, "%s is %lld, outside the %u-token vocabulary: ignored (default: %s)",
             key, (long long)from_spec, tok->n_tokens, dflt_text);
    size_t old = tok->id_warning ? strlen(tok->id_warning) : 0, add = strlen(one);
    char *w = realloc(tok->id_warning, old + add + 3);
    if (w) {
        if (old) memcpy(w + old, "; ", 2), old += 2;
        memcpy(w + old, one, add + 1);
        tok->id_warning = w;
    }
    return d;
}

static void make_control(sl_tokenizer *tok, int32_t id)
{
    /* A marker like <|im_end|> typed as normal is a conversion bug; treat it
     * as control so it is neither split by text nor printed. One typed
     * user-defined on purpose (Gemma 4's <|tool_response>, kept visible
     * for chat parsers) stays visible and becomes control as well, as
     * llama.cpp adds the control attribute to the user-defined one. */
    if (tok->tokens[id].type == SL_TOK_TYPE_USER_DEFINED) tok->tokens[id].flags |= SL_TOKF_CONTROL;
    else tok->tokens[id].type = SL_TOK_TYPE_CONTROL;
}

/* DeepSeek's "<｜end▁of▁sentence｜>" (octal escapes: a hex escape would eat
 * the letters after it). */
#define DS_EOS "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>"

/* Texts that mark the end of a turn; the first present one is the EOT
 * token when metadata names none. */
static const char *const k_eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", DS_EOS,
    "<end_of_utterance>", "[EOT]",
};

/* Texts that end generation wherever they appear in the vocabulary (Kimi
 * K2's [EOT] and [EOS]; Gemma 4's <eos>, <turn|> and <|tool_response>;
 * </s> unless <|tool_response> is there too, see setup_special_ids). */
static const char *const k_eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
    DS_EOS, "[EOT]", "[EOS]", "<eos>", "<turn|>", "<|tool_response>", "</s>",
};

/* The fill-in-the-middle pad, repository and file-separator tokens end
 * generation in llama.cpp (and become control): the id from metadata, else
 * the first of these texts present. */
static const char *const k_fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                              "[PAD]", NULL};
static const char *const k_fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                              "<REPO>", "<reponame>", NULL};
static const char *const k_fim_sep_texts[] = {"<|file_sep|>", NULL};

static void setup_fim_eog(sl_tokenizer *tok, const char *key, int64_t from_spec,
                          const char *const *texts)
{
    int32_t id = pick_id(tok, key, from_spec, SL_TOK_NONE);
    for (size_t i = 0; id == SL_TOK_NONE && texts[i]; i++) {
        id = find_text(tok, texts[i]);
        if (id >= 0) make_control(tok, id);
    }
    if (id >= 0) tok->tokens[id].flags |= SL_TOKF_EOG;
}

static void setup_special_ids(sl_tokenizer *tok, const sl_tok_spec *spec)
{
    bool spm = tok->model == SL_TOK_MODEL_SPM;
    tok->bos = pick_id(tok, "tokenizer.ggml.bos_token_id", spec->bos, spm ? 1 : SL_TOK_NONE);
    tok->eos = pick_id(tok, "tokenizer.ggml.eos_token_id", spec->eos, spm ? 2 : SL_TOK_NONE);
    tok->unk = pick_id(tok, "tokenizer.ggml.unknown_token_id", spec->unk, spm ? 0 : SL_TOK_NONE);
    tok->pad = pick_id(tok, "tokenizer.ggml.padding_token_id", spec->pad, SL_TOK_NONE);
    tok->eot = pick_id(tok, "tokenizer.ggml.eot_token_id", spec->eot, SL_TOK_NONE);
    tok->eom = pick_id(tok, "tokenizer.ggml.eom_token_id", spec->eom, SL_TOK_NONE);

    if (tok->eot == SL_TOK_NONE) {
        for (size_t i = 0; i < sizeof k_eot_texts / sizeof *k_eot_texts; i++) {
            int32_t id = find_text(tok, k_eot_texts[i]);
            if (id >= 0) {
                tok->eot = id;
                make_control(tok, id);
                break;
            }
        }
    }
    if (tok->eom == SL_TOK_NONE) {
        int32_t id = find_text(tok, "<|eom_id|>");
        if (id >= 0) {
            tok->eom = id;
            make_control(tok, id);
        }
    }
    setup_fim_eog(tok, "tokenizer.ggml.fim_pad_token_id", spec->fim_pad, k_fim_pad_texts);
    setup_fim_eog(tok, "tokenizer.ggml.fim_rep_token_id", spec->fim_rep, k_fim_rep_texts);
    setup_fim_eog(tok, "tokenizer.ggml.fim_sep_token_id", spec->fim_sep, k_fim_sep_texts);
    for (size_t i = 0; i < sizeof k_eog_texts / sizeof *k_eog_texts; i++) {
        int32_t id = find_text(tok, k_eog_texts[i]);
        if (id < 0) continue;
        tok->tokens[id].flags |= SL_TOKF_EOG;
        make_control(tok, id);
    }
    /* Gemma 4 (and PaddleOCR): with <|tool_response> in the vocabulary,
     * </s> is an ordinary token, neither end of generation nor control. */
    int32_t tool_resp = find_text(tok, "<|tool_response>"), s_end = find_text(tok, "</s>");
    if (tool_resp >= 0 && s_end >= 0) {
        tok->tokens[s_end].flags &= (uint8_t)~(SL_TOKF_EOG | SL_TOKF_CONTROL);
        tok->tokens[s_end].type = SL_TOK_TYPE_NORMAL;
    }
    if (tok->eos >= 0) tok->tokens[tok->eos].flags |= SL_TOKF_EOG;
    if (tok->eot >= 0) tok->tokens[tok->eot].flags |= SL_TOKF_EOG;
    if (tok->eom >= 0) tok->tokens[tok->eom].flags |= SL_TOKF_EOG;

    /* gpt-oss (harmony): <|end|> closes a message, not the generation, when
     * <|return|> and <|call|> exist. */
    int32_t ret = find_text(tok, "<|return|>"), call = find_text(tok, "<|call|>"),
            end = find_text(tok, "<|end|>");
    if (ret >= 0 && call >= 0 && end >= 0 && end != tok->eos) {
        tok->tokens[end].flags &= (uint8_t)~SL_TOKF_EOG;
        tok->tokens[end].type = SL_TOK_TYPE_USER_DEFINED;
    }
}

/* Phi-3's special tokens swallow the whitespace after them (its
 * tokenizer.json marks them rstrip), except <unk>, <s> and <|endoftext|>.
 * GGUF has no field for this, so like llama.cpp we go by general.name. */
static void setup_strip_flags(sl_tokenizer *tok, const char *name)
{
    if (!name) return;
    char low[128];
    size_t n = strlen(name);
    if (n >= sizeof low) n = sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = '\0';
    if (!strstr(low, "phi-3") && !strstr(low, "phi3")) return;
    for (uint32_t i = 0; i < tok->n_tokens; i++) {
        uint8_t ty = tok->tokens[i].type;
        if (ty == SL_TOK_TYPE_CONTROL || ty == SL_TOK_TYPE_USER_DEFINED || ty == SL_TOK_TYPE_UNKNOWN)
            tok->tokens[i].flags |= SL_TOKF_RSTRIP;
    }
    int32_t id = find_text(tok, "</s>");
    if (id >= 0) tok->tokens[id].flags |= SL_TOKF_RSTRIP;
    const char *keep[] = {"<unk>", "<s>", "<|endoftext|>"};
    for (size_t i = 0; i < 3; i++) {
        id = find_text(tok, keep[i]);
        if (id >= 0) tok->tokens[id].flags &= (uint8_t)~SL_TOKF_RSTRIP;
    }
}

/* True if inside every token U+2581 only follows U+2581: then no merge can
 * glue a character to a following ▁ and SPM may encode word by word. */
static bool spm_words_independent(const sl_tokenizer *tok)
{
    for (uint32_t i = 0; i < tok->n_tokens; i++) {
        const char *t = tok->pool + tok->tokens[i].off;
        size_t n = tok->tokens[i].len;
        for (size_t p = 1; p + 3 <= n; p++) {
            if (memcmp(t + p, "\xE2\x96\x81", 3) != 0) continue;
            if (p < 3 || memcmp(t + p - 3, "\xE2\x96\x81", 3) != 0) return false;
        }
    }
    return true;
}

static void setup_byte_tokens(sl_tokenizer *tok)
{
    const sl_tok_bytemap_entry *b2u = sl_tok_byte_to_unicode();
    for (int b = 0; b < 256; b++) {
        int32_t id;
        if (tok->model == SL_TOK_MODEL_SPM || tok->raw_bpe) {
            char hex[8];
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            id = find_text(tok, hex);
            if (id < 0 && !tok->raw_bpe) {
                char one = (char)b;
                id = sl_tok_map_get(&tok->vocab, &one, 1, 0);
            }
        } else {
            id = sl_tok_map_get(&tok->vocab, b2u[b].s, b2u[b].len, 0);
        }
        tok->byte_tok[b] = id >= 0 ? id : SL_TOK_NONE;
    }
}

int sl_tokenizer_build(sl_tokenizer **out, const sl_tok_spec *spec, sl_err *err)
{
    int rc;
    *out = NULL;
    if (!spec->model)
        return sl_err_set(err, SL_EFORMAT, "no tokenizer model given (tokenizer.ggml.model)");
    sl_tok_model model;
    if (!strcmp(spec->model, "gpt2")) model = SL_TOK_MODEL_BPE;
    else if (!strcmp(spec->model, "llama")) model = SL_TOK_MODEL_SPM;
    else if (!strcmp(spec->model, "gemma4")) model = SL_TOK_MODEL_GEMMA4;
    else {
        char shown[84];
        size_t n = strlen(spec->model), used;
        sl_escape(shown, sizeof shown - 3, spec->model, n, &used);
        if (used < n) strcat(shown, "...");
        return sl_err_set(err, SL_EUNSUPPORTED,
                          "tokenizer model '%s' is not supported (tokenizer.ggml.model): sluice "
                          "knows 'gpt2' (byte-level BPE), 'llama' (SentencePiece) and 'gemma4' "
                          "(Gemma 4's BPE)", shown);
    }
    if (spec->n_tokens == 0 || !spec->tokens)
        return sl_err_set(err, SL_EFORMAT, "the vocabulary has no tokens");
    if (spec->n_tokens > (uint32_t)INT32_MAX)
        return sl_err_set(err, SL_EFORMAT, "vocabulary of %u tokens is too large", spec->n_tokens);
    if (model != SL_TOK_MODEL_SPM && spec->n_merges && !spec->merges)
        return sl_err_set(err, SL_EINVAL, "merge count given without merges");

    sl_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) return sl_err_set(err, SL_ENOMEM, "out of memory");
    tok->model = model;

    if ((rc = build_vocab(tok, spec, err))) goto fail;
    if (model != SL_TOK_MODEL_SPM) {
        if ((rc = build_merges(tok, spec, err))) goto fail;
        if ((rc = setup_pre(tok, spec->pre, err))) goto fail;
        tok->add_space_prefix = false;
    } else {
        tok->pre_name = "none";
        tok->add_bos = true;
        tok->add_space_prefix = true;
        tok->spm_word_split = spm_words_independent(tok);
    }
    if (spec->add_bos >= 0) tok->add_bos = spec->add_bos != 0;
    if (spec->add_eos >= 0) tok->add_eos = spec->add_eos != 0;
    if (spec->add_space_prefix >= 0) tok->add_space_prefix = spec->add_space_prefix != 0;
    /* Gemma 4 always starts with BOS (llama.cpp overrides add_bos_token
     * false), and has no space prefix whatever the file says */
    if (tok->raw_bpe) {
        tok->add_bos = true;
        tok->add_space_prefix = false;
    }

    setup_special_ids(tok, spec);
    if (tok->add_bos && tok->bos == SL_TOK_NONE) {
        rc = sl_err_set(err, SL_EFORMAT,
                        "tokenizer.ggml.add_bos_token is true but there is no BOS token "
                        "(tokenizer.ggml.bos_token_id)");
        goto fail;
    }
    if (tok->add_eos && tok->eos == SL_TOK_NONE) {
        rc = sl_err_set(err, SL_EFORMAT,
                        "tokenizer.ggml.add_eos_token is true but there is no EOS token "
                        "(tokenizer.ggml.eos_token_id)");
        goto fail;
    }
    setup_strip_flags(tok, spec->name);
    setup_byte_tokens(tok);
    if ((rc = sl_tok_special_init(tok, err))) goto fail;
    if ((rc = sl_tok_pieces_init(tok, err))) goto fail;
    *out = tok;
    return SL_OK;
fail:
    sl_tokenizer_free(tok);
    return rc;
}

/* ---- accessors ----------------------------------------------------------- */

sl_tok_model sl_tokenizer_model(const sl_tokenizer *tok) { return tok->model; }
uint32_t sl_tokenizer_n_tokens(const sl_tokenizer *tok) { return tok->n_tokens; }
const char *sl_tokenizer_pre_name(const sl_tokenizer *tok) { return tok->pre_name; }
const char *sl_tokenizer_pre_warning(const sl_tokenizer *tok) { return tok->pre_warning; }
const char *sl_tokenizer_id_warning(const sl_tokenizer *tok) { return tok->id_warning; }
int32_t sl_tokenizer_bos(const sl_tokenizer *tok) { return tok->bos; }
int32_t sl_tokenizer_eos(const sl_tokenizer *tok) { return tok->eos; }
int32_t sl_tokenizer_eot(const sl_tokenizer *tok) { return tok->eot; }
int32_t sl_tokenizer_unk(const sl_tokenizer *tok) { return tok->unk; }
int32_t sl_tokenizer_pad(const sl_tokenizer *tok) { return tok->pad; }
bool sl_tokenizer_add_bos(const sl_tokenizer *tok) { return tok->add_bos; }
bool sl_tokenizer_add_eos(const sl_tokenizer *tok) { return tok->add_eos; }

static bool in_range(const sl_tokenizer *tok, int32_t id)
{
    return id >= 0 && (uint32_t)id < tok->n_tokens;
}

sl_tok_type sl_tokenizer_token_type(const sl_tokenizer *tok, int32_t id)
{
    return in_range(tok, id) ? (sl_tok_type)tok->tokens[id].type : SL_TOK_TYPE_UNDEFINED;
}

bool sl_tokenizer_is_control(const sl_tokenizer *tok, int32_t id)
{
    return in_range(tok, id) && (tok->tokens[id].type == SL_TOK_TYPE_CONTROL ||
                                 (tok->tokens[id].flags & SL_TOKF_CONTROL));
}

bool sl_tokenizer_is_eog(const sl_tokenizer *tok, int32_t id)
{
    return in_range(tok, id) && (tok->tokens[id].flags & SL_TOKF_EOG);
}

const char *sl_tokenizer_token_text(const sl_tokenizer *tok, int32_t id, size_t *len)
{
    if (!in_range(tok, id)) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = tok->tokens[id].len;
    return tok->pool + tok->tokens[id].off;
}

int32_t sl_tokenizer_find(const sl_tokenizer *tok, const char *text, size_t len)
{
    int32_t id = sl_tok_map_get(&tok->vocab, text, len, 0);
    return id >= 0 ? id : SL_TOK_NONE;
}

/* ---- encoding ------------------------------------------------------------ */

int sl_tokenizer_encode(const sl_tokenizer *tok, const char *text, size_t len, unsigned flags,
                        sl_tok_ids *out, sl_err *err)
{
    int rc = SL_OK;
    const size_t n0 = out->n;
    sl_tok_frags frags = {0};
    sl_tok_scratch s = {0};
    if (!text && len) return sl_err_set(err, SL_EINVAL, "NULL text of length %zu", len);

    if ((flags & SL_TOK_ADD_BOS) && tok->bos >= 0 && sl_tok_ids_push(out, tok->bos)) goto nomem;
    rc = sl_tok_partition(tok, text, len, (flags & SL_TOK_PARSE_SPECIAL) != 0, &frags, err);
    if (rc) goto fail;
    /* SentencePiece puts a space before text that starts the input or
     * follows a special token. */
    bool after_special = true;
    for (size_t i = 0; i < frags.n; i++) {
        const sl_tok_frag *f = &frags.v[i];
        if (f->id >= 0) {
            if (sl_tok_ids_push(out, f->id)) goto nomem;
            after_special = true;
            continue;
        }
        if (tok->model == SL_TOK_MODEL_SPM)
            rc = sl_tok_spm_encode(tok, text + f->off, f->len,
                                   tok->add_space_prefix && after_special, &s, out, err);
        else if (tok->raw_bpe)
            rc = sl_tok_gemma4_encode(tok, text + f->off, f->len, &s, out, err);
        else
            rc = sl_tok_bpe_encode(tok, text + f->off, f->len, &s, out, err);
        if (rc) goto fail;
        after_special = false;
    }
    if ((flags & SL_TOK_ADD_EOS) && tok->eos >= 0 && sl_tok_ids_push(out, tok->eos)) goto nomem;
    goto done;
nomem:
    rc = sl_err_set(err, SL_ENOMEM, "out of memory encoding a %zu-byte text", len);
fail:
    out->n = n0;
done:
    free(frags.v);
    sl_tok_scratch_free(&s);
    return rc;
}
