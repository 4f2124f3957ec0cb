/*
 * The et-hil firmware line protocol: the console lines every et-hil firmware prints.
 *
 * Why a shared header: the harness parses these lines (hil.records.console) whichever firmware
 * printed them -- the RT700 profiling application or the QEMU replay image -- so the formats live
 * in one place. They follow NXP's MCUXpresso ExecuTorch example, so a log from NXP's own firmware
 * parses the same way. Plain C (string-literal macros), usable from C and C++ and with any
 * printf-like function. Every line ends in CR LF, as the board's virtual COM port delivers it.
 */
#ifndef HIL_PROTOCOL_H
#define HIL_PROTOCOL_H

#define HIL_EOL "\r\n"

/* Progress lines (informational; the wording of NXP's example). */
#define HIL_FMT_BANNER "et-hil profiling firmware (%s) using an ExecuTorch model" HIL_EOL
#define HIL_FMT_PROGRAM_LOADED "Model buffer loaded, has %u methods" HIL_EOL
#define HIL_FMT_RUNNING_METHOD "Running method %s" HIL_EOL
#define HIL_FMT_PLANNED_BUFFER "Setting up planned buffer %u, size %u." HIL_EOL
#define HIL_MSG_METHOD_LOADED "Method loaded." HIL_EOL
#define HIL_MSG_PREPARING_INPUTS "Preparing inputs..." HIL_EOL
#define HIL_MSG_INPUTS_PREPARED "Input prepared." HIL_EOL
#define HIL_MSG_STARTING "Starting the model execution..." HIL_EOL
#define HIL_MSG_EXECUTED "Model executed successfully." HIL_EOL

/* Facts the harness parses. */
#define HIL_FMT_FREQUENCY "Core/NPU Frequency: %u MHz" HIL_EOL
/* name, first address, end address (exclusive) */
#define HIL_FMT_ALLOCATOR_ADDR "%s Addr: 0x%x - 0x%x" HIL_EOL
/* name, total (hex, dec), used (hex, dec), used percent */
#define HIL_FMT_ALLOCATOR_USED \
    "%s_used: Total 0x%x (%u B); Used 0x%x (%u B); Used/Total %u %%" HIL_EOL
#define HIL_FMT_MODEL_ADDR "Model Addr: 0x%x - 0x%x" HIL_EOL
#define HIL_FMT_MODEL_SIZE "Model Size: 0x%x (%u B)" HIL_EOL
#define HIL_FMT_OUTPUTS "%u outputs:" HIL_EOL
/* One line per iteration. */
#define HIL_FMT_INFERENCE_TIME "Inference time: %u us" HIL_EOL

/*
 * The run-configuration handshake (hil_result.h): what the firmware will run, and who said so
 * (HIL_RUN_CONFIG_FROM_DEBUGGER or HIL_RUN_CONFIG_DEFAULTS). The harness checks it against what it wrote.
 */
#define HIL_FMT_RUN_CONFIG "Run config: iterations %u, warm-up %u (%s)" HIL_EOL
#define HIL_RUN_CONFIG_FROM_DEBUGGER "set by the debugger"
#define HIL_RUN_CONFIG_DEFAULTS "defaults: no debugger wrote hil_run_config"
/* iterations, warm-up, max_runs: a count the firmware cannot hold. */
#define HIL_FMT_RUN_CONFIG_REFUSED "HIL error: run config out of range (iterations %u, warm-up %u, at most %u runs)" HIL_EOL

/*
 * The tensor handshake (hil_io.h): who gave the inputs. The harness checks the line against what it
 * wrote; the fill byte is the firmware's deterministic fallback when no debugger wrote any.
 */
#define HIL_FMT_INPUTS_SET "Inputs: %u tensor(s) set by the debugger" HIL_EOL
#define HIL_FMT_INPUTS_FALLBACK "Inputs: %u tensor(s) filled with byte 0x%x (fallback: no debugger wrote hil_io)" HIL_EOL
/* "inputs"/"outputs", how many, the table's limit. */
#define HIL_FMT_IO_TOO_MANY "HIL error: too many %s (%u), hil_io holds at most %u" HIL_EOL
/* "input"/"output", its index, the table's limit. */
#define HIL_FMT_IO_TOO_MANY_DIMS "HIL error: %s %u has more than %u dimensions (hil_io)" HIL_EOL

/*
 * The ETDump handshake: printed after get_etdump_data(), before hil_etdump_ready(): address, size
 * and CRC-32 (hil_crc32.h) of the ETDump. The harness checks the bytes it dumps against the CRC;
 * a firmware that prints the line without `, crc32: ...` (older ones did) is read without the
 * check, and the run's manifest says so. Only %x and %u of 32-bit values: the MCUXpresso SDK's
 * PRINTF (debug_console_lite) prints %p as bare hex without "0x" and knows no `z` length modifier
 * or flags unless built with PRINTF_ADVANCED_ENABLE.
 */
#define HIL_FMT_RESULT_BUF "Result buf: 0x%x, size: %u, crc32: 0x%x" HIL_EOL
/* The same for the debug buffer of an image built with one (HIL_DEBUG_BUFFER_SIZE > 0), printed first. */
#define HIL_FMT_DEBUG_BUF "Debug buf: 0x%x, size: %u, crc32: 0x%x" HIL_EOL
/*
 * The ETDump streamed over the console (hil_etdump_stream set, hil_result.h): after every batch of
 * runs that fits the ETDump buffer, that batch's ETDump, as
 *   HIL etdump <dump> begin: runs <n>, size <bytes>, crc32 0x<crc of the whole dump>
 *   HIL frame <seq> <bytes> 0x<crc32 of these bytes> <base64 of at most HIL_FRAME_BYTES bytes>
 *   ...
 *   HIL etdump <dump> end: <frames> frames
 * and once all runs are done the stream's end line. Sequence numbers count the frames of the whole
 * run from 0, so a lost, repeated or reordered frame shows; each frame's CRC-32 (hil_crc32.h) shows
 * a corrupted one. Base64 (RFC 4648, with padding): text any console passes unchanged.
 * hil.records.etdump_frames decodes them; the batches' run data are merged into one ETDump.
 */
#define HIL_FRAME_BYTES 180
#define HIL_FMT_STREAM_START "HIL etdump stream: at most %u runs per dump" HIL_EOL
#define HIL_FMT_DUMP_BEGIN "HIL etdump %u begin: runs %u, size %u, crc32 0x%x" HIL_EOL
#define HIL_FMT_FRAME "HIL frame %u %u 0x%x %s" HIL_EOL
#define HIL_FMT_DUMP_END "HIL etdump %u end: %u frames" HIL_EOL
#define HIL_FMT_STREAM_END "HIL etdump stream end: %u dumps, %u frames, %u runs" HIL_EOL
#define HIL_STREAM_SYMBOL "hil_etdump_stream"

#define HIL_MSG_PROGRAM_COMPLETE "Program complete, exiting." HIL_EOL

/* Failure: what failed and the ExecuTorch error code (or 0); then the firmware stops. */
#define HIL_FMT_ERROR "HIL error: %s failed (error 0x%x)" HIL_EOL
#define HIL_MSG_PROGRAM_FAILED "Program failed, exiting." HIL_EOL

/* The names the debugger looks for (board files: debug.breakpoint, debug.result_expr). */
#define HIL_BREAKPOINT_SYMBOL "hil_etdump_ready"
#define HIL_RESULT_SYMBOL "hil_etdump_result"
#define HIL_DEBUG_RESULT_SYMBOL "hil_debug_result"
#define HIL_CONFIG_BREAKPOINT_SYMBOL "hil_config_ready"
#define HIL_RUN_CONFIG_SYMBOL "hil_run_config"
#define HIL_IO_SYMBOL "hil_io"

#endif /* HIL_PROTOCOL_H */
