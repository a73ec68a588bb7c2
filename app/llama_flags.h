/* llama_flags.h - llama.cpp's flags without a sluice option of their own. */
#ifndef SL_APP_LLAMA_FLAGS_H
#define SL_APP_LLAMA_FLAGS_H

#include "model_flags.h"

/* If argv[*i] is a llama.cpp flag that sluice has no option for, takes it
 * (and its value, advancing *i) and returns 1: -fa on / auto (or bare),
 * --jinja, -cb and --no-mmap describe what sluice does anyway; --mmap sets
 * --dense-weights mmap; -ngl N (N != 0), -tb, --mlock and --numa have no
 * meaning here and print a note saying so. Returns -1 after printing why
 * for what sluice cannot do (-fa off) or a bad value, 0 for any other
 * argument. Called by model_flags_parse after sluice's own flags, so a
 * command's own option of the same name is never reached: no command has
 * one. */
int llama_flags_parse(model_flags *f, const char *cmd, int argc, char **argv, int *i);

#endif
