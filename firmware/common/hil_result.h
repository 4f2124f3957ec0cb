/*
 * The two debugger handshakes between a firmware and the harness.
 *
 * 1. Run configuration (before the first inference). One image serves any iteration count: the
 *    firmware calls hil_take_run_config(), which stops at `hil_config_ready`; there the harness's
 *    debugger writes `hil_run_config.iterations`, `.warmup` and finally `.magic`, then continues.
 *    The firmware reads `max_runs` as its own limit (the harness reads it too and refuses a larger
 *    count before writing). Without a debugger the magic stays 0 and the firmware says so on the
 *    console and uses its defaults: the harness never lets that pass silently, it checks the
 *    console's `Run config:` line against what it wrote.
 * 2. ETDump ready (after the last inference). The debugger stops at `hil_etdump_ready` (the default
 *    breakpoint of the board files) and reads `hil_etdump_result.buf` / `.size` (the default result
 *    expression) to dump the ETDump. An image with a debug buffer (HIL_DEBUG_BUFFER_SIZE > 0, the
 *    intermediate outputs) has published `hil_debug_result.buf` / `.size` (the bytes used) by then
 *    too, and the harness dumps those beside the ETDump; otherwise they are {NULL, 0}.
 *
 * All names are fixed; a firmware defines them exactly once (see hil_result.c).
 */
#ifndef HIL_RESULT_H
#define HIL_RESULT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "HIL1": written last by the harness, so a half-written config is never taken. */
#define HIL_RUN_CONFIG_MAGIC 0x314C4948u

/* Upper bound on warmup + iterations unless the firmware is built with another (-DHIL_MAX_RUNS=n). */
#ifndef HIL_MAX_RUNS
#define HIL_MAX_RUNS 1000u
#endif
#if HIL_MAX_RUNS < 1
#error "HIL_MAX_RUNS must be at least 1"
#endif

struct hil_run_config_t {
    uint32_t magic;      /* HIL_RUN_CONFIG_MAGIC once the harness has written this boot's config */
    uint32_t iterations; /* measured inferences, >= 1 */
    uint32_t warmup;     /* inferences before them (still traced; the harness drops them) */
    uint32_t max_runs;   /* set by the firmware: the most warmup + iterations it can hold */
};

/* volatile: the debugger writes it while the core is halted; every read must reach memory. */
extern volatile struct hil_run_config_t hil_run_config;

/*
 * The ETDump transport, written by the harness at the same stop as hil_run_config (before .magic):
 * 0 (the default) for one ETDump read out through the debugger at hil_etdump_ready, so the runs are
 * bounded by max_runs; non-zero for an ETDump streamed over the console in frames, one dump per
 * batch of at most max_runs runs (hil_protocol.h, HIL_FMT_FRAME), so only time bounds the count.
 * A firmware that cannot stream leaves it unreferenced; the harness then finds no such symbol.
 */
extern volatile uint32_t hil_etdump_stream;

struct hil_etdump_result_t {
    void *buf;
    size_t size;
};

extern volatile struct hil_etdump_result_t hil_etdump_result;

/* The debug buffer the ETDump's debug events point into (same layout: buf, bytes used). */
extern volatile struct hil_etdump_result_t hil_debug_result;

/*
 * Stop at `hil_config_ready` for the harness, then take the configuration: returns 1 and sets
 * *iterations / *warmup when the harness wrote a valid one, 0 (outputs untouched) when nobody did,
 * -1 when what was written is out of range (0 iterations, or more than max_runs in all; with
 * hil_etdump_stream set, max_runs bounds one dump, not the run, so any count of 32 bits is taken).
 * The magic is cleared after reading, so a later reset without a debugger is not mistaken for one with it.
 */
int hil_take_run_config(uint32_t *iterations, uint32_t *warmup);

/* The run-configuration breakpoint: a real, never-inlined call. */
void hil_config_ready(void);

/* Publish {buf, size} and stop at the breakpoint (returns when the debugger continues). */
void hil_publish_etdump(void *buf, size_t size);

/* Publish the debug buffer's {buf, used bytes}; call it before hil_publish_etdump(). */
void hil_publish_debug_buffer(void *buf, size_t size);

/* The ETDump breakpoint: a real, never-inlined call. */
void hil_etdump_ready(void);

#ifdef __cplusplus
}
#endif

#endif /* HIL_RESULT_H */
