/*
 * ETDump frames on the console (etdump_frames.h): base64 lines with a sequence number and CRC-32.
 */
#include "etdump_frames.h"

#include "hil_console.h"
#include "hil_crc32.h"
#include "hil_protocol.h"

static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* RFC 4648 base64 of `len` bytes into `out` (4 * ceil(len / 3) + 1 bytes), NUL-terminated. */
static void base64(const uint8_t *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        const size_t left = len - i;
        const uint32_t v = ((uint32_t)in[i] << 16) | (left > 1 ? (uint32_t)in[i + 1] << 8 : 0u) |
                           (left > 2 ? (uint32_t)in[i + 2] : 0u);
        out[o++] = kAlphabet[(v >> 18) & 63u];
        out[o++] = kAlphabet[(v >> 12) & 63u];
        out[o++] = left > 1 ? kAlphabet[(v >> 6) & 63u] : '=';
        out[o++] = left > 2 ? kAlphabet[v & 63u] : '=';
    }
    out[o] = '\0';
}

void hil_emit_etdump(struct hil_frame_stream *stream, const uint8_t *buf, size_t size, uint32_t runs)
{
    char text[4 * ((HIL_FRAME_BYTES + 2) / 3) + 1];
    const unsigned dump = (unsigned)stream->dumps;
    uint32_t frames = 0;
    hil_printf(HIL_FMT_DUMP_BEGIN, dump, (unsigned)runs, (unsigned)size, (unsigned)hil_crc32(buf, size));
    for (size_t at = 0; at < size; at += HIL_FRAME_BYTES) {
        const size_t n = size - at < HIL_FRAME_BYTES ? size - at : HIL_FRAME_BYTES;
        base64(buf + at, n, text);
        hil_printf(HIL_FMT_FRAME, (unsigned)stream->frames, (unsigned)n, (unsigned)hil_crc32(buf + at, n), text);
        ++stream->frames;
        ++frames;
    }
    hil_printf(HIL_FMT_DUMP_END, dump, (unsigned)frames);
    ++stream->dumps;
}
