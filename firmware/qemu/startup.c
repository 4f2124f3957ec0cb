/*
 * Reset and fault entry for both QEMU images (the replay image and the runtime image). QEMU's
 * mps2-an505 fetches the initial SP and the reset vector from 0x10000000 (secure SSRAM1), where
 * both link scripts put `.vectors`.
 */
#include "hw.h"
#include "hil_stack.h"

extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern uint32_t __stack_top[];
/* C++ static constructors (ExecuTorch registers its kernels and backends from them); empty in
 * the replay image. */
typedef void (*hil_ctor_t)(void);
extern hil_ctor_t __init_array_start[], __init_array_end[];

int main(void);

/* SCB->SHCSR: MEMFAULTENA, BUSFAULTENA, USGFAULTENA (Armv8-M ARM, B3.2.x). */
#define SCB_SHCSR (*(volatile uint32_t *)0xE000ED24u)
#define SHCSR_FAULTS_ENABLED ((1u << 16) | (1u << 17) | (1u << 18))
/* SCB->CPACR: full access to CP10 and CP11, the FPU (Armv8-M ARM, D1.2.x); QEMU's M33 has the
 * single-precision FPU the runtime image is compiled for (-mfpu=fpv5-sp-d16). */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define CPACR_FPU_FULL_ACCESS (0xFu << 20)

__attribute__((noreturn)) void hil_reset_handler(void)
{
    /* First of all: the unused stack painted, for the harness's high-water mark (hil_stack.h). */
    hil_stack_paint(HIL_STACK_PAINT_MARGIN);
    /* Each configurable fault takes its own vector, as most firmware sets it up, instead of
     * escalating to HardFault: the harness's report then starts with the fault's own name. */
    SCB_SHCSR |= SHCSR_FAULTS_ENABLED;
    /* Before any floating-point instruction, so before the constructors and main. */
    SCB_CPACR |= CPACR_FPU_FULL_ACCESS;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    memcpy(__data_start, __data_load, (size_t)((uintptr_t)__data_end - (uintptr_t)__data_start));
    memset(__bss_start, 0, (size_t)((uintptr_t)__bss_end - (uintptr_t)__bss_start));
    for (hil_ctor_t *ctor = __init_array_start; ctor < __init_array_end; ++ctor) {
        (*ctor)();
    }
    semihost_exit((uint32_t)main());
}

/*
 * A fault must not hang CI until the harness timeout: say so on the console and exit non-zero.
 * Under the harness the image never gets here on a fault: its debugger breaks on the first
 * instruction of each handler (the names NXP's SDK and CMSIS use, as in the board files'
 * debug.fault_handlers), reads the fault state while it is intact, and reports it.
 */
__attribute__((noreturn)) static void fault_exit(const char *name)
{
    uart_init();
    uart_puts("\r\nHIL image: ");
    uart_puts(name);
    uart_puts(", exiting\r\n");
    semihost_exit(3u);
}

__attribute__((noreturn)) void HardFault_Handler(void) { fault_exit("HardFault"); }
__attribute__((noreturn)) void MemManage_Handler(void) { fault_exit("MemManage fault"); }
__attribute__((noreturn)) void BusFault_Handler(void) { fault_exit("BusFault"); }
__attribute__((noreturn)) void UsageFault_Handler(void) { fault_exit("UsageFault"); }
__attribute__((noreturn)) void SecureFault_Handler(void) { fault_exit("SecureFault"); }
__attribute__((noreturn)) void hil_unexpected_handler(void) { fault_exit("unexpected exception"); }

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used)) const vector_t hil_vectors[16] = {
    (vector_t)__stack_top,
    hil_reset_handler,
    hil_unexpected_handler, /* NMI */
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    SecureFault_Handler,
    0,
    0,
    0,
    hil_unexpected_handler, /* SVCall */
    hil_unexpected_handler, /* DebugMonitor */
    0,
    hil_unexpected_handler, /* PendSV */
    hil_unexpected_handler, /* SysTick */
};
