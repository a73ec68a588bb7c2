/* cmd_mkmodel.c - `sluice mkmodel`: writes a synthetic model.
 *
 * Owns: the command line of mkmodel (flags, overrides, messages, progress
 * line). Everything about the model itself lives in src/synth/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "mkmodel_dims.h"
#include "util/file.h"
#include "synth/synth.h"
#include "synth/synth_ds.h"
#include "util/timer.h"

static const char *const CMD = "mkmodel";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sluice mkmodel --arch A [--preset P] [options] -o OUT.gguf\n"
            "\n"
            "Writes a synthetic model: random weights (zero mean, std 1/sqrt(fan-in), norms\n"
            "near 1), deterministic from --seed, with a real byte-level BPE tokenizer and a\n"
            "ChatML template. Streams to disk; memory use stays at a few tens of MB at any\n"
            "size. Writes with direct I/O where the file system allows it, so the model\n"
            "does not push other files out of the page cache.\n"
            "The same seed gives the same underlying weights at every --type.\n"
            "\n"
            "  --arch A        %s, deepseek2 (MLA), glm4moe, glm-dsa\n"
            "                  (llama is dense; --experts N or 'mixtral' makes it Mixtral-style)\n"
            "  --preset P      model dimensions (default tiny):\n",
            sl_synth_arch_list());
    for (size_t i = 0; i < sl_synth_preset_count(); i++)
        fprintf(out, "                    %-13s %s\n", sl_synth_preset_name(i),
                sl_synth_preset_summary(i));
    fprintf(out, "                  deepseek2 / glm4moe / glm-dsa: %s\n", sl_synth_ds_presets());
    fprintf(out,
            "  --type T        f32 (default), f16, q8_0, q4_0, q4_k_m, q4_k, q5_k, q6_k, mxfp4,\n"
            "                  iq4_xs\n"
            "                  mxfp4 (llama.cpp's MXFP4_MOE): routed experts mxfp4, the\n"
            "                  other matrices q8_0.\n"
            "                  q4_k_m: output q6_k; attn_v and ffn_down(_exps/_shexp) q6_k on\n"
            "                  the first/last eighth of layers and every third between,\n"
            "                  q4_k elsewhere; attn_qkv q5_k; norms, biases, routers and\n"
            "                  ssm_conv1d/ssm_a/ssm_dt always f32. Rows not\n"
            "                  a multiple of 256 (K-quants, iq4_xs) or 32 (q8_0/q4_0) fall back to\n"
            "                  q8_0 or f32 (reported).\n"
            "  --layers N      override the layer count (qwen35moe: every 4th layer is full\n"
            "                  attention, every 2nd in tiny/tiny-k; the others gated DeltaNet)\n"
            "  --nextn N       MTP (nextn) blocks written after the layers, 0..4 (deepseek2,\n"
            "                  glm4moe, glm-dsa; deepseek4 0..1): --spec-type draft-mtp runs\n"
            "                  the first\n"
            "  --dims K=V,...  override the preset's dimensions by name (keys: %s)\n"
            "  --experts E     override the expert count (MoE architectures, llama)\n"
            "  --top-k K       override the experts used per token\n"
            "  --vocab V       override the vocabulary size (>= 260)\n"
            "  --ctx N         override the context length\n"
            "  --tied          no output.weight: the head reuses token_embd\n"
            "  --holes         leave the tensor data as holes (a sparse file: the header and\n"
            "                  tensor index are real, every weight is zero, the data takes no\n"
            "                  disk where the file system has sparse files): for measuring\n"
            "                  load and index costs at sizes the disk cannot hold\n"
            "  --seed S        random seed (default 1)\n"
            "  --threads N     generator threads (default: online CPUs, at most 8)\n"
            "  --progress      show a progress line (default when stderr is a terminal)\n"
            "  -q, --quiet     print nothing on success\n"
            "  -o, --output F  output file (required)\n"
            "  -h, --help      this text\n", mkmodel_dims_keys());
}

typedef struct progress_state {
    uint64_t t0, last;
} progress_state;

static int on_progress(void *ud, uint64_t done, uint64_t total)
{
    progress_state *ps = ud;
    uint64_t now = sl_now_ns();
    if (done != total && now - ps->last < 500000000ull) return 0;
    ps->last = now;
    double s = sl_ns_to_s(now - ps->t0);
    fprintf(stderr, "\r  %6.1f / %.1f MiB  %5.1f%%  %6.1f MiB/s ", (double)done / 1048576.0,
            (double)total / 1048576.0, total ? 100.0 * (double)done / (double)total : 100.0,
            s > 0 ? (double)done / 1048576.0 / s : 0.0);
    if (done == total) fputc('\n', stderr);
    return 0;
}

static bool parse_u64(const char *flag, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "sluice %s: %s expects a non-negative whole number, got '%s'\n", CMD,
                flag, s);
        return false;
    }
    *out = v;
    return true;
}

/* After --holes: the file's size and the disk it really takes. */
static void print_holes(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        printf("  tensor data left as holes: file %.1f MiB, on disk %.1f MiB\n",
               (double)st.st_size / 1048576.0, (double)st.st_blocks * 512.0 / 1048576.0);
}

/* deepseek2 / glm4moe / glm-dsa / deepseek4 (synth_ds.h): their own
 * presets and writer. */
static int mkmodel_ds(const char *arch, const char *preset, const char *type, long layers,
                      long nextn, long experts, long top_k, long vocab, long ctx, uint64_t seed,
                      bool quiet, bool holes, const char *dims, const char *out)
{
    sl_err err = {0};
    sl_synth_ds c;
    if (sl_synth_ds_init(&c, arch, preset, &err)) {
        fprintf(stderr, "sluice %s: %s\n", CMD, err.msg);
        return 2;
    }
    if (type && !sl_synth_type_from_name(type, &c.type)) {
        fprintf(stderr, "sluice %s: unknown type '%s'\n", CMD, type);
        return 2;
    }
    if (layers > 0) {
        c.n_layer = (uint32_t)layers;
        if (c.n_dense_lead > c.n_layer) c.n_dense_lead = c.n_layer;
        if (c.n_hash > c.n_layer) c.n_hash = c.n_layer; /* deepseek4 */
    }
    if (nextn >= 0) c.n_nextn = (uint32_t)nextn;
    if (dims && !mkmodel_dims_apply(CMD, dims, NULL, &c)) return 2;
    if (experts > 0) c.n_expert = (uint32_t)experts;
    if (top_k > 0) c.n_expert_used = (uint32_t)top_k;
    if (vocab > 0) c.n_vocab = (uint32_t)vocab;
    if (ctx > 0) c.n_ctx = (uint32_t)ctx;
    c.seed = seed;
    c.holes = holes;
    uint64_t bytes = 0;
    const uint64_t t0 = sl_now_ns();
    if (sl_synth_ds_validate(&c, &err) || sl_synth_ds_write(&c, out, &bytes, &err)) {
        fprintf(stderr, "sluice %s: %s\n", CMD, err.msg);
        return 1;
    }
    if (!quiet)
        printf("wrote %s: %s, preset %s, type %s, %u layers (%u dense) + %u MTP, %u experts "
               "top-%u, vocab %u, seed %llu\n  %llu tensor bytes (%.1f MiB) in %.2f s\n", out,
               c.arch, c.preset, sl_synth_type_name(c.type), c.n_layer, c.n_dense_lead,
               c.n_nextn, c.n_expert, c.n_expert_used, c.n_vocab, (unsigned long long)c.seed,
               (unsigned long long)bytes, (double)bytes / 1048576.0,
               (double)(sl_now_ns() - t0) / 1e9);
    if (!quiet && holes) print_holes(out);
    return 0;
}

int cmd_mkmodel(int argc, char **argv)
{
    const char *arch = NULL, *preset = "tiny", *type = NULL, *out = NULL, *dims = NULL;
    long layers = -1, nextn = -1, experts = -1, top_k = -1, vocab = -1, ctx = -1, threads = -1;
    uint64_t seed = 1;
    bool tied = false, quiet = false, holes = false, progress = isatty(2);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
#define VALUE() do { if (!(v = arg_value(CMD, argc, argv, &i))) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--arch")) {
            VALUE(); arch = v;
        } else if (!strcmp(a, "--preset")) {
            VALUE(); preset = v;
        } else if (!strcmp(a, "--type")) {
            VALUE(); type = v;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            VALUE(); out = v;
        } else if (!strcmp(a, "--layers")) {
            VALUE(); if (!arg_int(CMD, a, v, 1, 1024, &layers)) return 2;
        } else if (!strcmp(a, "--nextn")) {
            VALUE(); if (!arg_int(CMD, a, v, 0, 4, &nextn)) return 2;
        } else if (!strcmp(a, "--dims")) {
            VALUE(); dims = v;
        } else if (!strcmp(a, "--experts")) {
            VALUE(); if (!arg_int(CMD, a, v, 1, 4096, &experts)) return 2;
        } else if (!strcmp(a, "--top-k")) {
            VALUE(); if (!arg_int(CMD, a, v, 1, 4096, &top_k)) return 2;
        } else if (!strcmp(a, "--vocab")) {
            VALUE(); if (!arg_int(CMD, a, v, 260, 1L << 22, &vocab)) return 2;
        } else if (!strcmp(a, "--ctx")) {
            VALUE(); if (!arg_int(CMD, a, v, 1, 1L << 24, &ctx)) return 2;
        } else if (!strcmp(a, "--threads")) {
            VALUE(); if (!arg_int(CMD, a, v, 1, 64, &threads)) return 2;
        } else if (!strcmp(a, "--seed")) {
            VALUE(); if (!parse_u64(a, v, &seed)) return 2;
        } else if (!strcmp(a, "--tied")) {
            tied = true;
        } else if (!strcmp(a, "--holes")) {
            holes = true;
        } else if (!strcmp(a, "--progress")) {
            progress = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = true;
        } else {
            fprintf(stderr, "sluice %s: unknown option '%s' (see --help)\n", CMD, a);
            return 2;
        }
#undef VALUE
    }
    if (!arch) {
        fprintf(stderr, "sluice %s: --arch is required (one of: %s)\n", CMD, sl_synth_arch_list());
        return 2;
    }
    if (!out) {
        fprintf(stderr, "sluice %s: -o OUT.gguf is required\n", CMD);
        return 2;
    }

    sl_err err = {0};
    /* a failed write removes the half-written output: never let that be a
     * device or a FIFO (as root, "-o /dev/full" would delete the node) */
    sl_file_id oid;
    if (sl_file_identity(out, &oid, &err)) {
        fprintf(stderr, "sluice %s: %s\n", CMD, err.msg);
        return 1;
    }
    if (oid.exists && !oid.regular) {
        fprintf(stderr, "sluice %s: -o '%s' is a %s; the model is written to a regular file\n",
                CMD, out, oid.kind);
        return 1;
    }
    if (sl_synth_ds_arch(arch))
        return mkmodel_ds(arch, preset, type, layers, nextn, experts, top_k, vocab, ctx, seed,
                          quiet, holes, dims, out);
    if (nextn >= 0) {
        fprintf(stderr, "sluice %s: --nextn: only deepseek2, glm4moe, glm-dsa and deepseek4 "
                "write MTP blocks\n", CMD);
        return 2;
    }
    sl_synth_config c;
    if (sl_synth_config_init(&c, arch, preset, &err)) {
        fprintf(stderr, "sluice %s: %s\n", CMD, err.msg);
        return 2;
    }
    if (type && !sl_synth_type_from_name(type, &c.type)) {
        fprintf(stderr,
                "sluice %s: unknown type '%s' (known: f32, f16, q8_0, q4_0, q4_k_m, q4_k, q5_k, "
                "q6_k, mxfp4)\n", CMD, type);
        return 2;
    }
    if (layers > 0) c.n_layer = (uint32_t)layers;
    if (dims && !mkmodel_dims_apply(CMD, dims, &c, NULL)) return 2;
    if (vocab > 0) c.n_vocab = (uint32_t)vocab;
    if (ctx > 0) c.n_ctx = (uint32_t)ctx;
    c.tied = tied;
    c.holes = holes;
    c.seed = seed;
    if (experts > 0 || top_k > 0) {
        if (!c.moe && strcmp(c.arch, "llama")) {
            fprintf(stderr, "sluice %s: architecture '%s' is dense; use %smoe for experts\n", CMD,
                    c.arch, c.arch);
            return 2;
        }
        if (!c.moe && experts <= 0) {
            fprintf(stderr, "sluice %s: --top-k on dense llama needs --experts too\n", CMD);
            return 2;
        }
        if (!c.moe) {
            /* llama with experts: Mixtral-style, top-2 unless told. */
            c.moe = true;
            c.n_expert_used = 2;
        }
        if (experts > 0) c.n_expert = (uint32_t)experts;
        if (top_k > 0) {
            c.n_expert_used = (uint32_t)top_k;
        } else if (c.n_expert_used > c.n_expert) {
            fprintf(stderr, "sluice %s: note: top-k lowered from %u to %u (the expert count)\n",
                    CMD, c.n_expert_used, c.n_expert);
            c.n_expert_used = c.n_expert;
        }
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c.threads = (unsigned)(threads > 0 ? threads : ncpu < 1 ? 1 : ncpu > 8 ? 8 : ncpu);
    if (sl_synth_config_validate(&c, &err)) {
        fprintf(stderr, "sluice %s: %s\n", CMD, err.msg);
        return 2;
    }

    progress_state ps = {sl_now_ns(), 0};
    sl_synth_stats st;
    if (sl_synth_write(&c, out, progress && !quiet ? on_progress : NULL, &ps, &st, &err)) {
        if (progress && !quiet) fputc('\n', stderr);
        fprintf(stderr, "sluice %s: %s\n", CMD, err.msg);
        return 1;
    }
    if (st.n_fallback)
        fprintf(stderr,
                "sluice %s: note: %zu tensors use q8_0 or f32 instead of %s because their rows "
                "do not fit its block size%s\n",
                CMD, st.n_fallback, sl_synth_type_name(c.type),
                !strcmp(c.preset, "tiny") ? " (use --preset tiny-k for K-quants)" : "");
    if (!quiet) {
        printf("wrote %s: %s%s, preset %s, type %s, %u layers, ", out, c.arch,
               c.moe && !strcmp(c.arch, "llama") ? " (Mixtral-style)" : "", c.preset,
               sl_synth_type_name(c.type), c.n_layer);
        if (c.moe) printf("%u experts top-%u, ", c.n_expert, c.n_expert_used);
        printf("vocab %u, seed %llu\n", c.n_vocab, (unsigned long long)c.seed);
        printf("  %zu tensors, %llu bytes (%.1f MiB) in %.2f s, %.1f MiB/s, %u threads, %s\n",
               st.n_tensors, (unsigned long long)st.file_bytes,
               (double)st.file_bytes / 1048576.0, st.seconds,
               st.seconds > 0 ? (double)st.file_bytes / 1048576.0 / st.seconds : 0.0, c.threads,
               st.direct_io ? "direct I/O" : "through the page cache");
        if (holes) print_holes(out);
    }
    return 0;
}
