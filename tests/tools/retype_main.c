/* retype_main.c - `retype SRC DST TYPE [MATCH]`: a copy of the GGUF file SRC
 * with every matrix whose name contains MATCH (default: all) requantised to
 * TYPE by sluice's own quantisers (tests/common/retype.c). A developer tool
 * for measurements (bench/kld_types.sh), not part of sluice. */
#include <stdio.h>
#include <string.h>

#include "common/retype.h"

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: retype SRC DST TYPE [MATCH]\n");
        return 2;
    }
    for (uint32_t t = 0; t < 64; t++) {
        const sl_type_traits *tr = sl_type_get(t);
        if (!tr || !tr->from_float || strcmp(sl_type_name(t), argv[3])) continue;
        return t_gguf_retype(argv[1], argv[2], argc == 5 ? argv[4] : "", (sl_type)t) ? 1 : 0;
    }
    fprintf(stderr, "retype: no quantiser for type '%s'\n", argv[3]);
    return 2;
}
