/*
 * The QEMU replay image: it behaves like the RT700 profiling firmware as seen from the harness.
 * It prints the console lines the harness rendered, copies the simulated ETDump into a RAM buffer
 * (as ETDumpGen fills its static buffer on the board), publishes {buf, size} in
 * `hil_etdump_result`, and stops at `hil_etdump_ready` for the debugger to dump the bytes.
 *
 * The data comes from `hil_data.S`, generated per build by hil/firmware/qemu_image.py.
 * Build-time variants that the harness's failure tests use:
 *   HIL_CALL_READY=0             never reach the breakpoint, just finish;
 *   HIL_RESULT_SIZE_OVERRIDE=n   publish (and print) size n instead of the real size.
 */
#include "hw.h"

#ifndef HIL_CALL_READY
#define HIL_CALL_READY 1
#endif

/* Linked-in data (hil_data.S). */
extern const uint8_t hil_console_text[], hil_console_text_end[];
extern const uint8_t hil_etdump_data[], hil_etdump_data_end[];
extern uint8_t hil_etdump_ram[]; /* 16-byte aligned, first thing in RAM */

struct hil_etdump_result_t {
    void *buf;
    size_t size;
};

/* The board file's `debug.result_expr`: GDB reads `.buf` and `.size` from here. */
__attribute__((used)) volatile struct hil_etdump_result_t hil_etdump_result;

/*
 * The board file's `debug.breakpoint`. noipa keeps it a real, separately addressable call that
 * the optimiser cannot inline, clone or drop; the asm body makes it have an effect.
 */
__attribute__((noinline, noipa, used)) void hil_etdump_ready(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    uart_init();
    uart_write((const char *)hil_console_text, (size_t)(hil_console_text_end - hil_console_text));

    size_t size = (size_t)(hil_etdump_data_end - hil_etdump_data);
    memcpy(hil_etdump_ram, hil_etdump_data, size);
#ifdef HIL_RESULT_SIZE_OVERRIDE
    size = (size_t)(HIL_RESULT_SIZE_OVERRIDE);
#endif
    hil_etdump_result.buf = hil_etdump_ram;
    hil_etdump_result.size = size;

    uart_puts("Result buf: 0x");
    uart_put_hex32((uint32_t)(uintptr_t)hil_etdump_ram);
    uart_puts(", size: ");
    uart_put_udec((uint32_t)size);
    uart_puts("\r\n");

#if HIL_CALL_READY
    hil_etdump_ready();
#endif

    uart_puts("Program complete, exiting.\r\n");
    return 0;
}
