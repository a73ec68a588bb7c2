#define _GNU_SOURCE
/* lltok: llama.cpp's own ids for a file of test strings.
 * usage: lltok VOCAB.gguf IN.inp OUT.out [add_special parse_special]
 * IN.inp: strings each followed by "\n__ggml_vocab_test__\n". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"
static void quiet(enum ggml_log_level l, const char *t, void *u) { (void)l; (void)u; if (getenv("LLTOK_LOG")) fputs(t, stderr); }
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    int add_special = argc > 4 ? atoi(argv[4]) : 0, parse_special = argc > 5 ? atoi(argv[5]) : 1;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m) { fprintf(stderr, "load failed\n"); return 1; }
    const struct llama_vocab *v = llama_model_get_vocab(m);
    FILE *f = fopen(argv[2], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1); if (fread(buf, 1, n, f) != (size_t)n) return 1; buf[n] = 0; fclose(f);
    FILE *o = fopen(argv[3], "wb");
    const char *sep = "\n__ggml_vocab_test__\n"; size_t sl = strlen(sep);
    char *p = buf, *end = buf + n;
    static llama_token ids[1 << 20];
    while (p < end) {
        char *s = memmem(p, end - p, sep, sl); if (!s) break;
        int k = llama_tokenize(v, p, (int)(s - p), ids, 1 << 20, add_special, parse_special);
        if (k < 0) { fprintf(stderr, "tokenize failed\n"); return 1; }
        for (int i = 0; i < k; i++) fprintf(o, " %d", ids[i]);
        fputc('\n', o);
        p = s + sl;
    }
    fclose(o);
    llama_model_free(m);
    return 0;
}
