/*
 * Arm semihosting exit. SYS_EXIT_EXTENDED (0x20) takes a {reason, status} block, so the status
 * reaches QEMU's own exit code; plain SYS_EXIT (0x18) on AArch32 cannot carry one.
 */
#include "hw.h"

#define SYS_EXIT_EXTENDED 0x20u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

void semihost_exit(uint32_t status)
{
    uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, status};
    register uint32_t r0 __asm__("r0") = SYS_EXIT_EXTENDED;
    register uint32_t *r1 __asm__("r1") = block;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) { /* only reached when semihosting is off: wait for the debugger */
        __asm__ volatile("wfi");
    }
}

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
