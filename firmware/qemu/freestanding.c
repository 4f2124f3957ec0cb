/*
 * memcpy and memset for the replay image, which links no C library (the runtime image takes
 * newlib's): GCC turns struct copies and loops into calls to them even under -ffreestanding.
 */
#include "hw.h"

void *memcpy(void *dst, const void *src, size_t len)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    /* Word copies when both ends are aligned: the ETDump copy is a megabyte under emulation. */
    if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0u) {
        uint32_t *dw = (uint32_t *)d;
        const uint32_t *sw = (const uint32_t *)s;
        for (; len >= 4u; len -= 4u) {
            *dw++ = *sw++;
        }
        d = (uint8_t *)dw;
        s = (const uint8_t *)sw;
    }
    while (len--) {
        *d++ = *s++;
    }
    return dst;
}

void *memset(void *dst, int value, size_t len)
{
    uint8_t *d = dst;
    while (len--) {
        *d++ = (uint8_t)value;
    }
    return dst;
}
