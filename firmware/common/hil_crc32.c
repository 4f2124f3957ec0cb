/* CRC-32 (IEEE, zlib-compatible), bitwise: see hil_crc32.h for why. */
#include "hil_crc32.h"

#define HIL_CRC32_POLY 0xEDB88320u /* 0x04C11DB7, bit-reversed: the reflected form zlib uses */

uint32_t hil_crc32(const void *data, size_t len)
{
    const uint8_t *bytes = (const uint8_t *)data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; bit++) {
            /* -(crc & 1) is all ones when the low bit is set: XOR the polynomial in without a branch. */
            crc = (crc >> 1) ^ (HIL_CRC32_POLY & (0u - (crc & 1u)));
        }
    }
    return crc ^ 0xFFFFFFFFu;
}
