/*
 * Stack painting: the firmware fills its unused stack with a known word at start, so the harness's
 * debugger can tell at the ETDump-ready breakpoint how deep the stack ever went (the high-water
 * mark): the lowest word of [__StackLimit, __StackTop) that no longer holds the pattern
 * (hil/target/stack_mark.py reads it). Both link scripts define __StackLimit and __StackTop, the
 * names CMSIS and NXP's start-up use.
 *
 * Where it is painted: QEMU's images in their reset handler (firmware/qemu/startup.c), before the
 * constructors run; the RT700 at the start of main (firmware/app/main.cpp), because its reset handler
 * is NXP's SDK start-up, which this project does not change; there the frames above main's stack
 * pointer are left as they are (they count as used), with HIL_STACK_PAINT_MARGIN bytes of room.
 */
#ifndef HIL_STACK_H
#define HIL_STACK_H

#include <stdint.h>

/* The paint word; hil/target/stack_mark.py has the same value (PAINT_WORD). */
#define HIL_STACK_PAINT_WORD 0xC5AC5AC5u
/* Bytes below the painter's own stack pointer left unpainted (its frame, an interrupt's). */
#define HIL_STACK_PAINT_MARGIN 64u

#ifdef __cplusplus
extern "C" {
#endif

extern uint32_t __StackLimit[];

/* Fill [__StackLimit, sp - margin) with HIL_STACK_PAINT_WORD. Inline and without calls: it must
 * not itself use the stack it paints (the volatile store keeps the compiler from a memset call). */
static inline __attribute__((always_inline)) void hil_stack_paint(uint32_t margin)
{
    uintptr_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    volatile uint32_t *word = __StackLimit;
    volatile uint32_t *const end = (volatile uint32_t *)((sp - margin) & ~(uintptr_t)3u);
    while (word < end) {
        *word++ = HIL_STACK_PAINT_WORD;
    }
}

#ifdef __cplusplus
}
#endif

#endif
