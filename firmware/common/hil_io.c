/*
 * The tensor handshake (see hil_io.h). Apart from the application so that any firmware links the
 * same symbol with the same guarantees.
 */
#include "hil_io.h"

/* `used`: kept even where only the debugger reads or writes it. */
__attribute__((used)) volatile struct hil_io_t hil_io;

int hil_take_inputs(void)
{
    if (hil_io.inputs_magic != HIL_IO_MAGIC) {
        return 0;
    }
    hil_io.inputs_magic = 0u;
    return 1;
}
