/*
 * The tensor tables of the I/O handshake (see io_tables.h and hil_io.h).
 */
#include "io_tables.h"

#include <cstdint>

#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "hil_console.h"
#include "hil_io.h"
#include "hil_protocol.h"

using executorch::aten::Tensor;
using executorch::runtime::EValue;
using executorch::runtime::Method;

namespace hil {

namespace {

/* One table entry for `tensor` at `index`; false when its rank exceeds the table's. */
bool describe(volatile hil_io_tensor_t& entry, const Tensor& tensor, size_t index) {
  const size_t dim = static_cast<size_t>(tensor.dim());
  if (dim > HIL_IO_MAX_DIMS) {
    return false;
  }
  entry.data = const_cast<void*>(tensor.const_data_ptr());
  entry.nbytes = static_cast<uint32_t>(tensor.nbytes());
  entry.dtype = static_cast<uint32_t>(tensor.scalar_type());
  entry.index = static_cast<uint32_t>(index);
  entry.dim = static_cast<uint32_t>(dim);
  for (size_t d = 0; d < dim; ++d) {
    entry.sizes[d] = static_cast<int32_t>(tensor.size(static_cast<ssize_t>(d)));
  }
  return true;
}

}  // namespace

bool publish_inputs(const InputSet& inputs) {
  hil_io.num_inputs = 0U;
  if (inputs.count > HIL_IO_MAX_TENSORS) {
    hil_printf(HIL_FMT_IO_TOO_MANY, "inputs", static_cast<unsigned>(inputs.count), HIL_IO_MAX_TENSORS);
    return false;
  }
  for (size_t k = 0; k < inputs.count; ++k) {
    if (!describe(hil_io.inputs[k], inputs.value[k].toTensor(), inputs.index[k])) {
      hil_printf(HIL_FMT_IO_TOO_MANY_DIMS, "input", static_cast<unsigned>(inputs.index[k]), HIL_IO_MAX_DIMS);
      return false;
    }
  }
  hil_io.num_inputs = static_cast<uint32_t>(inputs.count);
  return true;
}

bool take_inputs(const InputSet& inputs, unsigned fill_byte) {
  if (hil_take_inputs() != 0) {
    hil_printf(HIL_FMT_INPUTS_SET, static_cast<unsigned>(inputs.count));
    return true;
  }
  hil_printf(HIL_FMT_INPUTS_FALLBACK, static_cast<unsigned>(inputs.count), fill_byte);
  return false;
}

bool publish_outputs(const Method& method) {
  hil_io.num_outputs = 0U;
  const size_t count = method.outputs_size();
  if (count > HIL_IO_MAX_TENSORS) {
    hil_printf(HIL_FMT_IO_TOO_MANY, "outputs", static_cast<unsigned>(count), HIL_IO_MAX_TENSORS);
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    const EValue& value = method.get_output(i);
    volatile hil_io_tensor_t& entry = hil_io.outputs[i];
    if (!value.isTensor()) {
      entry.data = nullptr;
      entry.nbytes = 0U;
      entry.dtype = HIL_IO_NOT_A_TENSOR;
      entry.index = static_cast<uint32_t>(i);
      entry.dim = 0U;
      continue;
    }
    if (!describe(entry, value.toTensor(), i)) {
      hil_printf(HIL_FMT_IO_TOO_MANY_DIMS, "output", static_cast<unsigned>(i), HIL_IO_MAX_DIMS);
      return false;
    }
  }
  hil_io.num_outputs = static_cast<uint32_t>(count);
  return true;
}

}  // namespace hil
