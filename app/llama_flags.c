/* llama_flags.c - llama.cpp's flags that sluice has no option of its own for
 * (llama_flags.h). Scripts written for llama-cli, llama-server and
 * llama-perplexity pass them out of habit; each is either what sluice does
 * anyway (accepted in silence), a choice that has no meaning here (accepted
 * with a note saying so), or one sluice cannot honour (refused, saying what
 * it does instead). */
#include "llama_flags.h"

#include <stdio.h>
#include <string.h>

#include "args.h"

static bool is_any(const char *a, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(a, *names)) return true;
    return false;
}

/* -fa takes a value in llama.cpp since 2025 (on, off or auto, and the
 * words its parser takes for them); before, it was a switch. A following
 * word that is none of them is the next flag or the prompt, not its value. */
static int flash_attn(const char *cmd, int argc, char **argv, int *i)
{
    static const char *const on[] = {"on", "enabled", "true", "1", "auto", "-1", NULL};
    static const char *const off[] = {"off", "disabled", "false", "0", NULL};
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!v || (!is_any(v, on) && !is_any(v, off))) return 1;
    (*i)++;
    if (is_any(v, on)) return 1;
    fprintf(stderr, "sluice %s: -fa %s is not available: sluice computes attention only as "
            "llama.cpp's flash attention does (its -fa on, which its default, auto, picks on "
            "CPUs); drop the flag\n", cmd, v);
    return -1;
}

int llama_flags_parse(model_flags *f, const char *cmd, int argc, char **argv, int *i)
{
    static const char *const fa[] = {"-fa", "--flash-attn", NULL};
    static const char *const ngl[] = {"-ngl", "--gpu-layers", "--n-gpu-layers", NULL};
    static const char *const tb[] = {"-tb", "--threads-batch", NULL};
    static const char *const silent[] = {"--jinja", "-cb", "--cont-batching", NULL};
    const char *a = argv[*i], *v;
    long n;
    if (is_any(a, fa)) return flash_attn(cmd, argc, argv, i);
    if (is_any(a, silent)) return 1; /* what sluice does anyway */
    if (!strcmp(a, "--mmap")) {
        f->params.dense = SL_DENSE_MMAP; /* llama.cpp's default, sluice's --dense-weights mmap */
        return 1;
    }
    if (!strcmp(a, "--no-mmap")) {
        f->params.dense = SL_DENSE_ANON;
        return 1;
    }
    if (is_any(a, ngl)) {
        if (!(v = arg_value(cmd, argc, argv, i))) return -1;
        if (!arg_int(cmd, a, v, -1, 1 << 20, &n)) return -1;
        if (n != 0)
            fprintf(stderr, "sluice %s: note: %s %s is ignored: sluice runs on the CPU\n", cmd, a,
                    v);
        return 1;
    }
    if (is_any(a, tb)) {
        if (!(v = arg_value(cmd, argc, argv, i))) return -1;
        if (!arg_int(cmd, a, v, 1, 1024, &n)) return -1;
        fprintf(stderr, "sluice %s: note: %s is ignored: -t sets the threads of prompts and "
                "generation alike\n", cmd, a);
        return 1;
    }
    if (!strcmp(a, "--mlock")) {
        fprintf(stderr, "sluice %s: note: --mlock is ignored: sluice keeps its memory within "
                "--mem-budget and reads experts that do not fit from the file\n", cmd);
        return 1;
    }
    if (!strcmp(a, "--numa")) {
        if (!(v = arg_value(cmd, argc, argv, i))) return -1;
        fprintf(stderr, "sluice %s: note: --numa %s is ignored\n", cmd, v);
        return 1;
    }
    return 0;
}
