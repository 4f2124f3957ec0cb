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
