/*
 * The ETDump over the console, in frames (hil_protocol.h, HIL_FMT_FRAME): why frames, not one
 * blob, is that a console loses, repeats and garbles bytes, and the harness must say which.
 */
#ifndef HIL_ETDUMP_FRAMES_H
#define HIL_ETDUMP_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The running counts of one streamed run: dumps and frames sent so far (the next sequence number). */
struct hil_frame_stream {
    uint32_t dumps;
    uint32_t frames;
};

/*
 * Print dump number stream->dumps (`size` bytes at `buf`, the ETDump of `runs` runs) as its begin
 * line, its frames and its end line; advances the counts.
 */
void hil_emit_etdump(struct hil_frame_stream *stream, const uint8_t *buf, size_t size, uint32_t runs);

#ifdef __cplusplus
}
#endif

#endif /* HIL_ETDUMP_FRAMES_H */
