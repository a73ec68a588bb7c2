/* mkmodel_dims.h - `sluice mkmodel --dims k=v,...`: overrides of a preset's
 * dimensions by name, for sweeps over shapes (head sizes, FFN widths). */
#ifndef SLUICE_APP_MKMODEL_DIMS_H
#define SLUICE_APP_MKMODEL_DIMS_H

#include <stdbool.h>

#include "synth/synth.h"
#include "synth/synth_ds.h"

/* Applies LIST ("embd=128,head-dim=64,...") to C (the generic writer's
 * config) or D (deepseek2 / glm4moe / glm-dsa / deepseek4), whichever is
 * not NULL. Values are checked later by the writers' validation; here only
 * that each key names a field of that config and each value is a whole
 * number 1..65536. Prints the problem under CMD and returns false. */
bool mkmodel_dims_apply(const char *cmd, const char *list, sl_synth_config *c, sl_synth_ds *d);

/* The keys, for --help. */
const char *mkmodel_dims_keys(void);

#endif
