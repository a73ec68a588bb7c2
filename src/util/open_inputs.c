/* open_inputs.c - the list of open inputs (open_inputs.h) and
 * sl_file_open_input (file.h): plain data under a mutex, the same on every
 * platform. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/open_inputs.h"

/* Every file open through sl_file_open_read, by identity, with a count (the
 * same file may be open twice) and the path it was first opened by. */

typedef struct open_input {
    uint64_t dev, ino;
    unsigned refs;
    char *path;
} open_input;

static pthread_mutex_t inputs_mu = PTHREAD_MUTEX_INITIALIZER;
static open_input *inputs;
static size_t n_inputs, cap_inputs;

bool sl_open_inputs_add(uint64_t dev, uint64_t ino, const char *path)
{
    bool ok = true;
    pthread_mutex_lock(&inputs_mu);
    size_t i = 0;
    while (i < n_inputs && !(inputs[i].dev == dev && inputs[i].ino == ino)) i++;
    if (i < n_inputs) {
        inputs[i].refs++;
    } else {
        if (n_inputs == cap_inputs) {
            const size_t nc = cap_inputs ? 2 * cap_inputs : 16;
            open_input *ni = realloc(inputs, nc * sizeof *ni);
            if (ni) {
                inputs = ni;
                cap_inputs = nc;
            }
        }
        char *p = strdup(path);
        if (n_inputs < cap_inputs && p) inputs[n_inputs++] = (open_input){dev, ino, 1, p};
        else {
            free(p);
            ok = false;
        }
    }
    pthread_mutex_unlock(&inputs_mu);
    return ok;
}

void sl_open_inputs_drop(uint64_t dev, uint64_t ino)
{
    pthread_mutex_lock(&inputs_mu);
    for (size_t i = 0; i < n_inputs; i++) {
        if (inputs[i].dev != dev || inputs[i].ino != ino) continue;
        if (--inputs[i].refs == 0) {
            free(inputs[i].path);
            inputs[i] = inputs[--n_inputs];
        }
        break;
    }
    if (n_inputs == 0) { /* nothing open: no memory held either */
        free(inputs);
        inputs = NULL;
        cap_inputs = 0;
    }
    pthread_mutex_unlock(&inputs_mu);
}

bool sl_file_open_input(const sl_file_id *id, char *path, size_t cap)
{
    if (!id->exists) return false;
    bool found = false;
    pthread_mutex_lock(&inputs_mu);
    for (size_t i = 0; i < n_inputs && !found; i++)
        if (inputs[i].dev == id->dev && inputs[i].ino == id->ino) {
            found = true;
            if (cap) snprintf(path, cap, "%s", inputs[i].path);
        }
    pthread_mutex_unlock(&inputs_mu);
    return found;
}
