/*
 * QEMU mps2-an505 (a Cortex-M33) as a board of the shared application: firmware/app/board_glue.h
 * for the emulated core. Console on CMSDK UART0 (../uart.c), the PAL's ticks from the FPGAIO
 * counter, the end of the program through semihosting (../semihost.c), no NPU.
 *
 * Why the FPGAIO counter: QEMU 7.2 does not model the DWT (DEMCR and CYCCNT read 0, writes are
 * ignored), so the RT700's cycle counter would stamp every event 0. The FPGAIO COUNTER (secure
 * alias 0x50302018, AN505 FPGA I/O block offset 0x18) is a 32-bit up counter QEMU models at the
 * board's 20 MHz reference clock, in QEMU's virtual time: under `-icount shift=N,sleep=off` every
 * instruction advances virtual time by 2^N ns, so a tick is 50 / 2^N instructions and two runs of
 * the same program read the same counts.
 */
#include <stdio.h>

#include "../hw.h"
#include "board_glue.h"

#define FPGAIO_COUNTER (*(volatile uint32_t *)0x50302018u)
/* The AN505's reference clock, which the FPGAIO counter counts. */
#define MPS2_AN505_REF_CLOCK_HZ 20000000u
/* The longest console line (ExecuTorch's log lines stop at 256 characters). */
#define CONSOLE_LINE_MAX 512

const char hil_board_name[] = "qemu-mps2-an505";

static uint32_t g_counter_origin;

void hil_board_init(void)
{
    uart_init();
}

int32_t hil_npu_init(void)
{
    return 0;
}

uint32_t hil_core_clock_hz(void)
{
    return MPS2_AN505_REF_CLOCK_HZ;
}

void hil_cycle_counter_start(void)
{
    g_counter_origin = FPGAIO_COUNTER;
}

uint32_t hil_cycle_counter_read(void)
{
    return FPGAIO_COUNTER - g_counter_origin; /* modulo 2^32, like the raw counter */
}

void hil_console_vprintf(const char *format, va_list args)
{
    char line[CONSOLE_LINE_MAX];
    const int n = vsnprintf(line, sizeof(line), format, args);
    if (n > 0) {
        uart_write(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1u);
    }
}

void hil_board_exit(int status)
{
    semihost_exit((uint32_t)status);
}

/* newlib's start-up hooks; this image runs its constructors itself (../startup.c). */
void _init(void) {}
void _fini(void) {}

/* What crtbegin would define (-nostartfiles leaves it out): the handle C++ static objects with
 * destructors register under (__cxa_atexit); this image never returns from main to run them. */
void *__dso_handle = &__dso_handle;
