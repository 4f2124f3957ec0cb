/*
 * The ETDump handshake (see hil_result.h). Kept apart from the application so that any firmware
 * -- the RT700 app, a user's own -- links the same two symbols with the same guarantees.
 */
#include "hil_result.h"

/* `used` keeps it under --gc-sections even if only the debugger reads it. */
__attribute__((used)) volatile struct hil_etdump_result_t hil_etdump_result;

/*
 * noipa: the optimiser may not inline, clone or drop it, so `break hil_etdump_ready` always hits
 * one real address; the asm body gives it an effect and orders the result stores before it.
 */
__attribute__((noinline, noipa, used)) void hil_etdump_ready(void)
{
    __asm__ volatile("" ::: "memory");
}

void hil_publish_etdump(void *buf, size_t size)
{
    hil_etdump_result.buf = buf;
    hil_etdump_result.size = size;
    hil_etdump_ready();
}
