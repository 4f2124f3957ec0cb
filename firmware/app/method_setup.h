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

/* The most tensor inputs a method may have (their EValues live in an InputSet). */
constexpr size_t kMaxInputs = 16;

/* The method's tensor inputs, kept so every run can start from them again (reload_inputs). */
struct InputSet {
  size_t count = 0;
  size_t index[kMaxInputs] = {};  // the input's position in the method
  executorch::runtime::EValue value[kMaxInputs];
};

/*
 * Gives every tensor input a buffer from `allocator` filled with `fill_byte`, described by a
 * TensorImpl built from the method meta (sizes, dim order, dtype), sets it on the method and
 * keeps it in `inputs`. Non-tensor inputs keep the value stored in the program.
 */
executorch::runtime::Error prepare_inputs(
    executorch::runtime::Method& method,
    const executorch::runtime::MethodMeta& meta,
    executorch::runtime::MemoryAllocator& allocator,
    uint8_t fill_byte,
    InputSet& inputs);

/*
 * Sets `inputs` on the method again. A memory-planned input is copied into its planned buffer,
 * which the planner may share with an intermediate tensor: without this, every run after the
 * first computes on what the previous run left there.
 */
executorch::runtime::Error reload_inputs(
    executorch::runtime::Method& method,
    const InputSet& inputs);

/*
 * The most runs (warm-up included) whose events fit an ETDump buffer of `buffer_bytes`, at most
 * `limit`. A run traces at most two events per instruction (the operator call and its kernel)
 * plus Method::execute; the sizes per event and per run are bounds measured on ETDumpGen's
 * flatcc output with margin (HIL_ETDUMP_EVENT_BYTES, HIL_ETDUMP_RUN_BYTES in hil_config.h). An
 * ETDump buffer that runs out ends the program in ExecuTorch's out-of-memory abort, so the
 * harness is told this number at the run-configuration handshake and refuses larger counts.
 */
uint32_t max_traced_runs(
    const executorch::runtime::MethodMeta& meta,
    size_t buffer_bytes,
    uint32_t limit);

}  // namespace hil
