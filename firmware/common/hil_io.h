/*
 * The tensor handshake between a firmware and the harness: the method's inputs written in by the
 * debugger, its outputs read back by it.
 *
 * Inputs (at the run-configuration breakpoint, `hil_config_ready`): before it stops there the
 * firmware publishes one `hil_io.inputs[k]` per tensor input -- where its bytes live, how many,
 * the ExecuTorch dtype and the shape. The harness checks that table against the program it
 * exported, writes every input's bytes, and writes `hil_io.inputs_magic` last. After the stop the
 * firmware takes the inputs (hil_take_inputs): with the magic it runs on what was written; without
 * it keeps its own fill (deterministic) and says so on the console (HIL_FMT_INPUTS), and the
 * harness never lets that pass silently.
 *
 * Outputs (at the ETDump breakpoint, `hil_etdump_ready`): after the last inference the firmware
 * publishes `hil_io.outputs[k]` the same way; the buffers stay valid while the core is halted there.
 *
 * All names are fixed; a firmware defines them exactly once (see hil_io.c).
 */
#ifndef HIL_IO_H
#define HIL_IO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "HIO1": written last by the harness, so half-written inputs are never taken. */
#define HIL_IO_MAGIC 0x314F4948u
/* Most tensors per side and dimensions per tensor the table holds. */
#define HIL_IO_MAX_TENSORS 16u
#define HIL_IO_MAX_DIMS 8u
/* dtype of an output that is no tensor (its data and nbytes are 0). */
#define HIL_IO_NOT_A_TENSOR 0xFFFFFFFFu

struct hil_io_tensor_t {
    void *data;          /* the tensor's bytes (inputs: where the harness writes them) */
    uint32_t nbytes;
    uint32_t dtype;      /* ExecuTorch ScalarType: 6 Float, 1 Char (int8), 0 Byte (uint8), 3 Int, 4 Long */
    uint32_t index;      /* the position among the method's inputs or outputs */
    uint32_t dim;        /* number of sizes[] used */
    int32_t sizes[HIL_IO_MAX_DIMS];
};

struct hil_io_t {
    uint32_t inputs_magic;  /* HIL_IO_MAGIC once the harness has written this boot's inputs */
    uint32_t num_inputs;    /* set by the firmware before hil_config_ready */
    uint32_t num_outputs;   /* set by the firmware before hil_etdump_ready (0 until then) */
    uint32_t reserved;
    struct hil_io_tensor_t inputs[HIL_IO_MAX_TENSORS];
    struct hil_io_tensor_t outputs[HIL_IO_MAX_TENSORS];
};

/* volatile: the debugger reads and writes it while the core is halted. */
extern volatile struct hil_io_t hil_io;

/*
 * After hil_config_ready: 1 when the harness wrote the inputs (the magic is then cleared, so a later
 * reset without a debugger is not mistaken for one with it), 0 when nobody did.
 */
int hil_take_inputs(void);

#ifdef __cplusplus
}
#endif

#endif /* HIL_IO_H */
