/* console_win.c - Windows implementation of console.h. */
#include "util/console.h"

#include <windows.h>
#include <shellapi.h>

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/utf16_win.h"

void sl_console_init(int *argc, char ***argv)
{
    SetConsoleOutputCP(CP_UTF8);
    SetConsoleCP(CP_UTF8);
    /* generated text is bytes: no "\r\n" for "\n" (as on Linux) */
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
    _setmode(_fileno(stdin), _O_BINARY);
    int n = 0;
    wchar_t **w = CommandLineToArgvW(GetCommandLineW(), &n);
    if (!w || n < 1) return;
    char **v = calloc((size_t)n + 1, sizeof *v);
    for (int i = 0; v && i < n; i++)
        if (!(v[i] = sl_utf16_to_utf8(w[i]))) {
            for (int j = 0; j < i; j++) free(v[j]);
            free(v);
            v = NULL;
        }
    LocalFree(w);
    if (!v) return;
    *argc = n;
    *argv = v; /* kept for the life of the process */
}
