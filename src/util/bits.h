/* bits.h - a float's bits and back (memcpy, no aliasing tricks). */
#ifndef SL_UTIL_BITS_H
#define SL_UTIL_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t sl_f2bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float sl_bits2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
