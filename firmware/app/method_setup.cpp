/*
 * Planned memory and inputs for a loaded method (see method_setup.h).
 */
#include "method_setup.h"

#include <cstring>
#include <new>

#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/core/span.h>
#include <executorch/runtime/core/tag.h>

#include "hil_config.h"
#include "hil_console.h"
#include "hil_protocol.h"

using executorch::aten::DimOrderType;
using executorch::aten::SizesType;
using executorch::aten::StridesType;
using executorch::aten::Tensor;
using executorch::aten::TensorImpl;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::HierarchicalAllocator;
using executorch::runtime::MemoryAllocator;
using executorch::runtime::Method;
using executorch::runtime::MethodMeta;
using executorch::runtime::Result;
using executorch::runtime::Span;
using executorch::runtime::Tag;
using executorch::runtime::TensorInfo;

namespace hil {

Result<HierarchicalAllocator*> make_planned_memory(
    const MethodMeta& meta,
    MemoryAllocator& allocator) {
  const size_t count = meta.num_memory_planned_buffers();
  Span<uint8_t>* spans = allocator.allocateList<Span<uint8_t>>(count);
  if (count != 0 && spans == nullptr) {
    return Error::MemoryAllocationFailed;
  }
  for (size_t i = 0; i < count; ++i) {
    Result<int64_t> size = meta.memory_planned_buffer_size(i);
    if (!size.ok()) {
      return size.error();
    }
    const size_t bytes = static_cast<size_t>(size.get());
    hil_printf(HIL_FMT_PLANNED_BUFFER, static_cast<unsigned>(i),
           static_cast<unsigned>(bytes));
    // 16-byte alignment suits every dtype and the Neutron driver's DMA.
    auto* data = static_cast<uint8_t*>(allocator.allocate(bytes, 16));
    if (bytes != 0 && data == nullptr) {
      return Error::MemoryAllocationFailed;
    }
    spans[i] = Span<uint8_t>(data, bytes);
  }
  auto* planned = allocator.allocateInstance<HierarchicalAllocator>();
  if (planned == nullptr) {
    return Error::MemoryAllocationFailed;
  }
  new (planned) HierarchicalAllocator(Span<Span<uint8_t>>(spans, count));
  return planned;
}

namespace {

/*
 * A TensorImpl for `info` over `data`, with its shape arrays copied into `allocator`
 * (TensorImpl keeps non-owning, mutable pointers, so they must outlive the method run).
 */
TensorImpl* make_tensor_impl(
    const TensorInfo& info,
    void* data,
    MemoryAllocator& allocator) {
  const size_t dim = info.sizes().size();
  auto* sizes = allocator.allocateList<SizesType>(dim == 0 ? 1 : dim);
  auto* dim_order = allocator.allocateList<DimOrderType>(dim == 0 ? 1 : dim);
  auto* strides = allocator.allocateList<StridesType>(dim == 0 ? 1 : dim);
  auto* impl = allocator.allocateInstance<TensorImpl>();
  if (sizes == nullptr || dim_order == nullptr || strides == nullptr ||
      impl == nullptr) {
    return nullptr;
  }
  for (size_t d = 0; d < dim; ++d) {
    sizes[d] = static_cast<SizesType>(info.sizes()[d]);
    dim_order[d] = static_cast<DimOrderType>(info.dim_order()[d]);
  }
  // Strides follow the dim order: the innermost dimension in memory has stride 1.
  StridesType stride = 1;
  for (size_t k = dim; k-- > 0;) {
    strides[dim_order[k]] = stride;
    stride *= static_cast<StridesType>(sizes[dim_order[k]]);
  }
  return new (impl) TensorImpl(
      info.scalar_type(), static_cast<ssize_t>(dim), sizes, data, dim_order,
      strides);
}

}  // namespace

Error prepare_inputs(
    Method& method,
    const MethodMeta& meta,
    MemoryAllocator& allocator,
    uint8_t fill_byte,
    InputSet& inputs) {
  inputs.count = 0;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<Tag> tag = meta.input_tag(i);
    if (!tag.ok()) {
      return tag.error();
    }
    if (tag.get() != Tag::Tensor) {
      continue;  // scalars and None keep the value the program carries
    }
    Result<TensorInfo> info = meta.input_tensor_meta(i);
    if (!info.ok()) {
      return info.error();
    }
    const size_t nbytes = info->nbytes();
    void* data = allocator.allocate(nbytes == 0 ? 1 : nbytes, 16);
    if (data == nullptr) {
      return Error::MemoryAllocationFailed;
    }
    std::memset(data, fill_byte, nbytes);
    TensorImpl* impl = make_tensor_impl(info.get(), data, allocator);
    if (impl == nullptr) {
      return Error::MemoryAllocationFailed;
    }
    if (inputs.count == kMaxInputs) {
      return Error::NotSupported;
    }
    inputs.index[inputs.count] = i;
    inputs.value[inputs.count] = EValue(Tensor(impl));
    ++inputs.count;
  }
  return reload_inputs(method, inputs);
}

Error reload_inputs(Method& method, const InputSet& inputs) {
  for (size_t k = 0; k < inputs.count; ++k) {
    // A memory-planned input gets these bytes copied in; an unplanned one points at them.
    const Error err = method.set_input(inputs.value[k], inputs.index[k]);
    if (err != Error::Ok) {
      return err;
    }
  }
  return Error::Ok;
}

uint32_t max_traced_runs(const MethodMeta& meta, size_t buffer_bytes, uint32_t limit) {
  // num_instructions() is marked experimental (ET_EXPERIMENTAL, a deprecation attribute); it is
  // the one count of what a run traces that the program itself holds.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const size_t instructions = meta.num_instructions();
#pragma GCC diagnostic pop
  const size_t events = HIL_ETDUMP_EVENTS_PER_INSTRUCTION * instructions + 1U;
  const size_t per_run = HIL_ETDUMP_RUN_BYTES + events * HIL_ETDUMP_EVENT_BYTES;
  if (buffer_bytes <= HIL_ETDUMP_FIXED_BYTES) {
    return 0U;
  }
  const size_t runs = (buffer_bytes - HIL_ETDUMP_FIXED_BYTES) / per_run;
  return runs < limit ? static_cast<uint32_t>(runs) : limit;
}

}  // namespace hil
