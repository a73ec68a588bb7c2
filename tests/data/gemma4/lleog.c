/* lleog: llama.cpp's end-of-generation and control flags of every token of a
 * vocabulary file (llama_vocab_is_eog, llama_vocab_is_control); built like
 * lltok.c. usage: lleog VOCAB.gguf */
#include <stdio.h>
#include "llama.h"
static void quiet(enum ggml_log_level l, const char *t, void *u) { (void)l; (void)t; (void)u; }
int main(int argc, char **argv) {
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    const struct llama_vocab *v = llama_model_get_vocab(m);
    for (int i = 0; i < llama_vocab_n_tokens(v); i++) printf("%d eog=%d ctl=%d\n", i, llama_vocab_is_eog(v, i), llama_vocab_is_control(v, i));
    return 0;
}
