/*
 * CRC-32 of the ETDump, printed beside its size (HIL_FMT_RESULT_BUF) so the harness can tell the
 * bytes it read through the debugger from the bytes the firmware wrote: a dump cut short, read from
 * the wrong address or garbled on the way differs. IEEE 802.3 / zlib's crc32(): reflected
 * polynomial 0xEDB88320, initial value and final XOR 0xFFFFFFFF, so the harness checks it with
 * Python's zlib.crc32. Bit by bit, without a table: 1 KiB less flash, and a 512 KiB ETDump takes
 * tens of milliseconds on a Cortex-M33, once per run.
 */
#ifndef HIL_CRC32_H
#define HIL_CRC32_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CRC-32 of `len` bytes at `data` (0 for none), as zlib.crc32(bytes) computes it. */
uint32_t hil_crc32(const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* HIL_CRC32_H */
