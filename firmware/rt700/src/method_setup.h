/*
 * Getting a loaded Method ready to run: its planned memory and its inputs.
 */
#pragma once

#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/core/result.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>

namespace hil {

/*
 * One buffer per memory-planned pool of the method (sizes from the method meta), carved from
 * `allocator`, wrapped in a HierarchicalAllocator that also lives in `allocator`.
 * Prints a "Setting up planned buffer" line for each.
 */
executorch::runtime::Result<executorch::runtime::HierarchicalAllocator*>
make_planned_memory(
    const executorch::runtime::MethodMeta& meta,
    executorch::runtime::MemoryAllocator& allocator);

/*
 * Gives every tensor input a buffer from `allocator` filled with `fill_byte`, described by a
 * TensorImpl built from the method meta (sizes, dim order, dtype), and sets it on the method.
 * Non-tensor inputs keep the value stored in the program.
 */
executorch::runtime::Error prepare_inputs(
    executorch::runtime::Method& method,
    const executorch::runtime::MethodMeta& meta,
    executorch::runtime::MemoryAllocator& allocator,
    uint8_t fill_byte);

}  // namespace hil
