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

#include "fsl_debug_console.h"
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
    PRINTF(HIL_FMT_PLANNED_BUFFER, static_cast<unsigned>(i),
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
    uint8_t fill_byte) {
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
    // A memory-planned input gets these bytes copied in; an unplanned one points at them.
    const Error err = method.set_input(EValue(Tensor(impl)), i);
    if (err != Error::Ok) {
      return err;
    }
  }
  return Error::Ok;
}

}  // namespace hil
