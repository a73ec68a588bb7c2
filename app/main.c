/* main.c - the sluice binary: dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "outputs.h"
#include "util/console.h"
#include "util/file.h"

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "generate text from a prompt (-p TEXT or -f FILE)"},
    {"chat", cmd_chat, "multi-turn chat on stdin/stdout with the model's chat template"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server (chat, completions, streaming)"},
    {"perplexity", cmd_perplexity, "perplexity of a text; KL-divergence against a reference"},
    {"inspect", cmd_inspect, "show a GGUF model's metadata, tensors and expert sizing"},
    {"mkmodel", cmd_mkmodel, "write a synthetic test model (deterministic from a seed)"},
    {"tokenize", cmd_tokenize, "show how a model's tokenizer splits a text into token ids"},
    {"bench", cmd_bench, "prompt/generation speed of a model; --kernels for matvec GB/s"},
    {"iobench", cmd_iobench, "the drive's random-read curve through sluice's own I/O lanes"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: sluice <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'sluice <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    sl_console_init(&argc, &argv); /* Windows: UTF-8 arguments and console */
    /* a closed stdout/stderr must not be reused by a file opened later */
    sl_file_guard_std_fds();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return outputs_finish_stdout("help", true) ? 0 : 1;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        int rc = commands[i].fn(argc - 1, argv + 1);
        /* every command's output checked once more at the end: a failed
         * write of stdout is an error even if the command saw none (a
         * command that failed has said why already) */
        if (!outputs_finish_stdout(commands[i].name, rc == 0) && rc == 0) rc = 1;
        return rc;
    }
    fprintf(stderr, "sluice: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
