/*
 * The ETDump handshake between a firmware and the harness's debugger.
 *
 * Why: the debugger stops at `hil_etdump_ready` (the default breakpoint of the board files) and
 * reads `hil_etdump_result.buf` / `.size` (the default result expression) to dump the ETDump.
 * Both names are fixed; a firmware defines them exactly once (see hil_result.c).
 */
#ifndef HIL_RESULT_H
#define HIL_RESULT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hil_etdump_result_t {
    void *buf;
    size_t size;
};

/* volatile: every store reaches memory before the breakpoint, whatever the optimiser does. */
extern volatile struct hil_etdump_result_t hil_etdump_result;

/* Publish {buf, size} and stop at the breakpoint (returns when the debugger continues). */
void hil_publish_etdump(void *buf, size_t size);

/* The breakpoint: a real, never-inlined call. */
void hil_etdump_ready(void);

#ifdef __cplusplus
}
#endif

#endif /* HIL_RESULT_H */
