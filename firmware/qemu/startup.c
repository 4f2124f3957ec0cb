/*
 * Reset and fault entry for the replay image. QEMU's mps2-an505 fetches the initial SP and the
 * reset vector from 0x10000000 (secure SSRAM1), where link.ld puts `.vectors`.
 */
#include "hw.h"

extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern uint32_t __stack_top[];

int main(void);

__attribute__((noreturn)) void hil_reset_handler(void)
{
    memcpy(__data_start, __data_load, (size_t)((uintptr_t)__data_end - (uintptr_t)__data_start));
    memset(__bss_start, 0, (size_t)((uintptr_t)__bss_end - (uintptr_t)__bss_start));
    semihost_exit((uint32_t)main());
}

/* A fault must not hang CI until the harness timeout: say so on the console and exit non-zero. */
__attribute__((noreturn)) void hil_fault_handler(void)
{
    uart_init();
    uart_puts("\r\nHIL replay image: unexpected exception, exiting\r\n");
    semihost_exit(3u);
}

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used)) const vector_t hil_vectors[16] = {
    (vector_t)__stack_top,
    hil_reset_handler,
    hil_fault_handler, /* NMI */
    hil_fault_handler, /* HardFault */
    hil_fault_handler, /* MemManage */
    hil_fault_handler, /* BusFault */
    hil_fault_handler, /* UsageFault */
    hil_fault_handler, /* SecureFault */
    0,
    0,
    0,
    hil_fault_handler, /* SVCall */
    hil_fault_handler, /* DebugMonitor */
    0,
    hil_fault_handler, /* PendSV */
    hil_fault_handler, /* SysTick */
};
