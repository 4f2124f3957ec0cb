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
#include "hil_result.h"
#include "hw.h"

#ifndef HIL_CALL_READY
#define HIL_CALL_READY 1
#endif

/* Linked-in data (hil_data.S). */
extern const uint8_t hil_console_text[], hil_console_text_end[];
extern const uint8_t hil_etdump_data[], hil_etdump_data_end[];
extern uint8_t hil_etdump_ram[]; /* 16-byte aligned, first thing in RAM */

int main(void)
{
    uart_init();
    uart_write((const char *)hil_console_text, (size_t)(hil_console_text_end - hil_console_text));

    size_t size = (size_t)(hil_etdump_data_end - hil_etdump_data);
    memcpy(hil_etdump_ram, hil_etdump_data, size);
#ifdef HIL_RESULT_SIZE_OVERRIDE
    size = (size_t)(HIL_RESULT_SIZE_OVERRIDE);
#endif

    uart_puts("Result buf: 0x");
    uart_put_hex32((uint32_t)(uintptr_t)hil_etdump_ram);
    uart_puts(", size: ");
    uart_put_udec((uint32_t)size);
    uart_puts("\r\n");

#if HIL_CALL_READY
    hil_publish_etdump(hil_etdump_ram, size);
#else
    hil_etdump_result.buf = hil_etdump_ram;
    hil_etdump_result.size = size;
#endif

    uart_puts("Program complete, exiting.\r\n");
    return 0;
}
