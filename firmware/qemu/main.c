/*
 * The QEMU replay image: it behaves like the RT700 profiling firmware as seen from the harness.
 * It takes its run configuration from the debugger (hil_take_run_config, the handshake of
 * hil_result.h), prints the console lines the harness rendered, copies the simulated ETDump into a
 * RAM buffer (as ETDumpGen fills its static buffer on the board), publishes {buf, size} in
 * `hil_etdump_result`, and stops at `hil_etdump_ready` for the debugger to dump the bytes.
 *
 * Unlike the RT700 firmware it cannot run any count it is told: its ETDump and console were
 * synthesised on the host for exactly `hil_replay_runs` inferences (warm-up included). So a boot
 * nobody configured, or a configuration of another count, is refused with a `HIL error:` line and
 * a non-zero exit status instead of replaying runs that do not match what was asked.
 *
 * The data comes from `hil_data.S`, generated per build by hil/firmware/qemu_image.py.
 * Build-time variants that the harness's failure tests use:
 *   HIL_CALL_READY=0             never reach the ETDump breakpoint, just finish;
 *   HIL_RESULT_SIZE_OVERRIDE=n   publish (and print) size n instead of the real size;
 *   HIL_RUN_CONFIG_HANDSHAKE=0   an image from before the handshake: nothing calls
 *                                hil_take_run_config, so --gc-sections drops hil_config_ready and
 *                                hil_run_config from the ELF, as in firmware built before they existed;
 *   HIL_RUN_CONFIG_IGNORED=1     a buggy firmware that stops for the debugger but reads the
 *                                configuration before the stop, so it says it runs its defaults and
 *                                replays anyway: what the harness's check of the echo must catch;
 *   HIL_FAULT=1, 2 or 3          a model run that crashes or hangs, after the console lines and
 *                                before the result: 1 reads an address no device decodes (a precise
 *                                BusFault), 2 executes an undefined instruction (a UsageFault),
 *                                3 loops forever (a hang the harness's timeout must catch);
 *   HIL_RESULT_CRC=1 or 2        1 prints a CRC-32 that is not the ETDump's (what a garbled dump
 *                                looks like), 2 prints no CRC at all, like firmware from before it.
 */
#include "hil_crc32.h"
#include "hil_protocol.h"
#include "hil_result.h"
#include "hw.h"

#ifndef HIL_CALL_READY
#define HIL_CALL_READY 1
#endif
#ifndef HIL_RUN_CONFIG_HANDSHAKE
#define HIL_RUN_CONFIG_HANDSHAKE 1
#endif
#ifndef HIL_RUN_CONFIG_IGNORED
#define HIL_RUN_CONFIG_IGNORED 0
#endif
#ifndef HIL_FAULT
#define HIL_FAULT 0
#endif
#ifndef HIL_RESULT_CRC
#define HIL_RESULT_CRC 0
#endif

/* Nothing on mps2-an505 decodes this address (QEMU 7.2, secure alias): a load from it is a precise
 * data bus error with BFAR = this address, found by experiment. */
#define UNMAPPED_ADDRESS 0x58000000u
/* The Result buf line of firmware from before the CRC (the HIL_RESULT_CRC=2 variant). */
#define REPLAY_FMT_RESULT_BUF_NO_CRC "Result buf: 0x%x, size: %u" HIL_EOL

/* The replay image's own refusals (HIL error lines, like HIL_FMT_ERROR's). */
#define REPLAY_FMT_WRONG_COUNT \
    "HIL error: replay image holds %u runs, asked for %u (iterations %u, warm-up %u)" HIL_EOL
#define REPLAY_FMT_NOT_CONFIGURED \
    "HIL error: replay image holds %u runs, but no debugger wrote hil_run_config" HIL_EOL
/* Exit status of a refused run configuration (QEMU's own exit status, through semihosting). */
#define EXIT_RUN_CONFIG 2

/* Linked-in data (hil_data.S). */
extern const uint8_t hil_console_text[], hil_console_text_end[];
extern const uint8_t hil_etdump_data[], hil_etdump_data_end[];
extern const uint32_t hil_replay_runs; /* warm-up + iterations the data above was made for */
extern uint8_t hil_etdump_ram[];       /* 16-byte aligned, first thing in RAM */

#if HIL_RUN_CONFIG_HANDSHAKE && HIL_RUN_CONFIG_IGNORED
/* The bug of the HIL_RUN_CONFIG_IGNORED variant: the magic is read before the stop, so it never sees the write. */
static int take_run_config(void)
{
    const int written = hil_run_config.magic == HIL_RUN_CONFIG_MAGIC;
    hil_config_ready();
    uart_printf(HIL_FMT_RUN_CONFIG, (unsigned)hil_replay_runs, 0u,
                written ? HIL_RUN_CONFIG_FROM_DEBUGGER : HIL_RUN_CONFIG_DEFAULTS);
    return 0;
}
#elif HIL_RUN_CONFIG_HANDSHAKE
/* Take the harness's run configuration and say what it is; 0 to go on, else the exit status. */
static int take_run_config(void)
{
    const unsigned held = (unsigned)hil_replay_runs;
    uint32_t iterations = hil_replay_runs;
    uint32_t warmup = 0u;
    const int taken = hil_take_run_config(&iterations, &warmup);
    if (taken < 0) {
        uart_printf(HIL_FMT_RUN_CONFIG_REFUSED, (unsigned)hil_run_config.iterations,
                    (unsigned)hil_run_config.warmup, (unsigned)hil_run_config.max_runs);
        return EXIT_RUN_CONFIG;
    }
    uart_printf(HIL_FMT_RUN_CONFIG, (unsigned)iterations, (unsigned)warmup,
                taken ? HIL_RUN_CONFIG_FROM_DEBUGGER : HIL_RUN_CONFIG_DEFAULTS);
    if (!taken) {
        uart_printf(REPLAY_FMT_NOT_CONFIGURED, held);
        return EXIT_RUN_CONFIG;
    }
    /* hil_take_run_config() checked iterations + warmup <= max_runs: the sum cannot wrap. */
    if (iterations + warmup != hil_replay_runs) {
        uart_printf(REPLAY_FMT_WRONG_COUNT, held, (unsigned)(iterations + warmup), (unsigned)iterations,
                    (unsigned)warmup);
        return EXIT_RUN_CONFIG;
    }
    return 0;
}
#endif

#if HIL_FAULT
/* The crashing or hanging "model run" of the HIL_FAULT variants; noinline, so it is the faulting
 * function in the harness's report, with its own file and line. */
__attribute__((noinline, noipa)) static uint32_t replay_bus_fault(void)
{
    return *(volatile uint32_t *)UNMAPPED_ADDRESS;
}

__attribute__((noinline, noipa)) static void replay_undefined_instruction(void)
{
    __asm__ volatile("udf #0");
}

volatile uint32_t replay_hang_counter;

__attribute__((noinline, noipa)) static void replay_hang(void)
{
    for (;;) {
        replay_hang_counter++;
    }
}

static void replay_fault(void)
{
    if (HIL_FAULT == 1) {
        (void)replay_bus_fault();
    } else if (HIL_FAULT == 2) {
        replay_undefined_instruction();
    } else {
        replay_hang();
    }
}
#endif

int main(void)
{
    uart_init();
#if HIL_RUN_CONFIG_HANDSHAKE
    const int refused = take_run_config();
    if (refused != 0) {
        uart_printf(HIL_MSG_PROGRAM_FAILED);
        return refused;
    }
#endif
    uart_write((const char *)hil_console_text, (size_t)(hil_console_text_end - hil_console_text));
#if HIL_FAULT
    replay_fault();
#endif

    size_t size = (size_t)(hil_etdump_data_end - hil_etdump_data);
    memcpy(hil_etdump_ram, hil_etdump_data, size);
    /* Over what was written, whatever size is published below. */
    uint32_t crc = hil_crc32(hil_etdump_ram, size);
#ifdef HIL_RESULT_SIZE_OVERRIDE
    size = (size_t)(HIL_RESULT_SIZE_OVERRIDE);
#endif

#if HIL_RESULT_CRC == 2
    uart_printf(REPLAY_FMT_RESULT_BUF_NO_CRC, (unsigned)(uintptr_t)hil_etdump_ram, (unsigned)size);
#else
    if (HIL_RESULT_CRC == 1) {
        crc ^= 0x00010000u; /* one bit off: what a single garbled byte can do */
    }
    uart_printf(HIL_FMT_RESULT_BUF, (unsigned)(uintptr_t)hil_etdump_ram, (unsigned)size, (unsigned)crc);
#endif

#if HIL_CALL_READY
    hil_publish_etdump(hil_etdump_ram, size);
#else
    hil_etdump_result.buf = hil_etdump_ram;
    hil_etdump_result.size = size;
#endif

    uart_printf(HIL_MSG_PROGRAM_COMPLETE);
    return 0;
}
