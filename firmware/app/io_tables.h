/*
 * The tensor tables of firmware/common/hil_io.h, filled from a loaded method.
 */
#pragma once

#include <executorch/runtime/executor/method.h>

#include "method_setup.h"

namespace hil {

/*
 * Publishes every input of `inputs` in hil_io.inputs (where its bytes are, nbytes, dtype, shape),
 * for the harness to write at the run-configuration breakpoint. Returns false (and says why on the
 * console) when an input does not fit the table.
 */
bool publish_inputs(const InputSet& inputs);

/*
 * After the breakpoint: says on the console whether the harness wrote the inputs or the fill byte
 * stays (HIL_FMT_INPUTS_SET / HIL_FMT_INPUTS_FALLBACK). Returns true when the harness wrote them.
 */
bool take_inputs(const InputSet& inputs, unsigned fill_byte);

/*
 * Publishes the method's outputs after its last run in hil_io.outputs (non-tensor outputs with
 * dtype HIL_IO_NOT_A_TENSOR), for the harness to read at the ETDump breakpoint. Returns false
 * (said on the console) when an output does not fit the table.
 */
bool publish_outputs(const executorch::runtime::Method& method);

}  // namespace hil
