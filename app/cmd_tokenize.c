/* cmd_tokenize.c - `sluice tokenize`: show how a model's tokenizer cuts a
 * text.
 *
 * Owns: the command line, reading the text, and printing ids with their
 * pieces (escaped so that partial UTF-8 and control bytes stay visible).
 * Works on any GGUF file with tokenizer metadata, including vocabulary-only
 * files. Must not touch tensors: only the tokenizer is built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "outputs.h"
#include "gguf/gguf.h"
#include "tok/tokenizer.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice tokenize -m MODEL.gguf (-p TEXT | -f FILE) [options]\n"
            "\n"
            "Encodes TEXT with the tokenizer stored in MODEL.gguf (a vocabulary-only file is\n"
            "enough) and prints one line per token: its id and its piece, quoted, with\n"
            "control bytes and bytes of incomplete UTF-8 shown as escapes.\n"
            "\n"
            "options:\n"
            "  -m, --model FILE       the GGUF file\n"
            "  -p, --prompt TEXT      the text to tokenize (taken literally)\n"
            "  -f, --file FILE        read the text from FILE instead (a regular file of at\n"
            "                         most 1 GiB; - reads standard input)\n"
            "      --ids              print only the ids, space separated, on one line\n"
            "      --no-bos           do not add BOS even if the model asks for it\n"
            "      --no-parse-special treat the text of control tokens (e.g. <|im_end|>)\n"
            "                         as plain text instead of matching the tokens\n"
            "  -h, --help             show this help and exit\n");
}

/* Length of the well-formed UTF-8 sequence at s (1-4), 0 if ill-formed. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t k;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c == 0xE0) { k = 3; lo = 0xA0; }
    else if (c == 0xED) { k = 3; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) k = 3;
    else if (c == 0xF0) { k = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) k = 4;
    else if (c == 0xF4) { k = 4; hi = 0x8F; }
    else return 0;
    if (n < k || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return k;
}

static void put_piece(FILE *f, const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    fputc('\'', f);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = utf8_seq(s + i, n - i);
        if (k > 1) {
            fwrite(s + i, 1, k, f);
            i += k;
            continue;
        }
        if (c == '\'' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c < 0x20 || c >= 0x7F) fprintf(f, "\\x%02X", c);
        else fputc((int)c, f);
        i++;
    }
    fputc('\'', f);
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *file = NULL;
    bool ids_only = false, no_bos = false, no_special = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = !strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") ||
                         !strcmp(a, "--prompt") || !strcmp(a, "-f") || !strcmp(a, "--file");
        if (has_value && i + 1 >= argc) {
            fprintf(stderr, "sluice tokenize: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            model = argv[++i];
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            prompt = argv[++i];
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            file = argv[++i];
        } else if (!strcmp(a, "--ids")) {
            ids_only = true;
        } else if (!strcmp(a, "--no-bos")) {
            no_bos = true;
        } else if (!strcmp(a, "--no-parse-special")) {
            no_special = true;
        } else {
            fprintf(stderr, "sluice tokenize: unknown option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model || (!prompt && !file) || (prompt && file)) {
        fprintf(stderr, "sluice tokenize: need -m MODEL and exactly one of -p TEXT or -f FILE\n\n");
        usage(stderr);
        return 2;
    }

    int rc = 1;
    char *text = NULL;
    size_t len = 0;
    sl_gguf *g = NULL;
    sl_tokenizer *tok = NULL;
    sl_tok_ids ids = {0};
    sl_err err = {0};

    /* stdout appended to the model (>> model.gguf) would damage it */
    const file_role in[] = {{"the model (-m)", model}, {"the text (-f)", file}};
    if (!outputs_check("tokenize", in, 2, NULL, 0)) goto out;
    if (file) {
        text = outputs_read_text("tokenize", file, &len);
        if (!text) goto out;
    }
    if (sl_gguf_open(&g, model, &err) || sl_tokenizer_load(&tok, g, &err)) {
        fprintf(stderr, "sluice tokenize: %s: %s\n", model, err.msg);
        goto out;
    }
    sl_gguf_close(g);
    g = NULL;
    if (sl_tokenizer_pre_warning(tok))
        fprintf(stderr, "sluice tokenize: warning: %s\n", sl_tokenizer_pre_warning(tok));
    if (sl_tokenizer_id_warning(tok))
        fprintf(stderr, "sluice tokenize: warning: %s\n", sl_tokenizer_id_warning(tok));

    unsigned flags = 0;
    if (!no_bos && sl_tokenizer_add_bos(tok)) flags |= SL_TOK_ADD_BOS;
    if (!no_special) flags |= SL_TOK_PARSE_SPECIAL;
    const char *src = file ? text : prompt;
    if (!file) len = strlen(prompt);
    if (sl_tokenizer_encode(tok, src, len, flags, &ids, &err)) {
        fprintf(stderr, "sluice tokenize: %s\n", err.msg);
        goto out;
    }

    if (ids_only) {
        for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", ids.ids[i]);
        putchar('\n');
    } else {
        for (size_t i = 0; i < ids.n; i++) {
            size_t n;
            const char *p = sl_tokenizer_piece(tok, ids.ids[i], true, &n);
            printf("%6d -> ", ids.ids[i]);
            put_piece(stdout, p, n);
            putchar('\n');
        }
    }
    rc = 0; /* main checks that standard output took it all */
out:
    sl_tok_ids_free(&ids);
    sl_tokenizer_free(tok);
    sl_gguf_close(g);
    free(text);
    return rc;
}
