/* mem_budget.c - the default memory budget's margin (declared in mem.h;
 * arithmetic only, shared by every platform's mem*.c). */
#include "util/mem.h"

uint64_t sl_mem_default_budget(uint64_t avail)
{
    const uint64_t floor = 512ull << 20;
    const uint64_t margin = avail / 20 > floor ? avail / 20 : floor;
    return avail > margin ? avail - margin : 0;
}
