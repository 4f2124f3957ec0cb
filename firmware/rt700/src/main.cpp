/*
 * et-hil RT700 profiling firmware.
 *
 * Runs the compiled-in ExecuTorch program HIL_ITERATIONS times under an ETDumpGen event tracer
 * and hands the ETDump to the harness: it prints the line protocol (firmware/common/
 * hil_protocol.h), publishes {buf, size} in `hil_etdump_result` and calls `hil_etdump_ready()`,
 * where the harness's debugger stops and dumps the bytes.
 */
#include <cstdint>

#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/span.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include "board_glue.h"
#include "fsl_debug_console.h"
#include "hil_config.h"
#include "hil_protocol.h"
#include "hil_result.h"
#include "method_setup.h"
#include "model_data.h"
#include "peak_allocator.h"

using executorch::etdump::ETDumpGen;
using executorch::etdump::ETDumpResult;
using executorch::extension::BufferDataLoader;
using executorch::runtime::Error;
using executorch::runtime::HierarchicalAllocator;
using executorch::runtime::MemoryManager;
using executorch::runtime::Method;
using executorch::runtime::MethodMeta;
using executorch::runtime::Program;
using executorch::runtime::Result;
using executorch::runtime::Span;

namespace {

alignas(16) HIL_IN_POOL_SECTION uint8_t g_method_pool[HIL_METHOD_POOL_SIZE];
alignas(16) HIL_IN_POOL_SECTION uint8_t g_temp_pool[HIL_TEMP_POOL_SIZE];
alignas(16) HIL_IN_POOL_SECTION uint8_t g_etdump_buffer[HIL_ETDUMP_BUFFER_SIZE];
uint32_t g_inference_us[HIL_ITERATIONS];

/* Says what failed on the console and ends the program (the harness then sees no breakpoint). */
int fail(const char* what, Error err) {
  PRINTF(HIL_FMT_ERROR, what, static_cast<unsigned>(err));
  PRINTF(HIL_MSG_PROGRAM_FAILED);
  return 1;
}

unsigned addr(const void* p) {
  return static_cast<unsigned>(reinterpret_cast<uintptr_t>(p));
}

void print_allocator(const char* name, const hil::PeakAllocator& a) {
  const unsigned total = a.size();
  const unsigned used = static_cast<unsigned>(a.peak_size());
  PRINTF(HIL_FMT_ALLOCATOR_ADDR, name, addr(a.base_address()),
         addr(a.base_address() + total));
  PRINTF(HIL_FMT_ALLOCATOR_USED, name, total, total, used, used,
         total == 0 ? 0U : static_cast<unsigned>(100ULL * used / total));
}

/* Microseconds between two PAL tick readings, by the same ratio the ETDump uses. */
uint32_t ticks_to_us(et_timestamp_t start, et_timestamp_t end) {
  const et_tick_ratio_t r = et_pal_ticks_to_ns_multiplier();
  const uint64_t ns = (end - start) * r.numerator / r.denominator;
  return static_cast<uint32_t>(ns / 1000U);
}

}  // namespace

int main(void) {
  hil_board_init();
  executorch::runtime::runtime_init();  // et_pal_init(): starts the cycle counter
  PRINTF(HIL_FMT_BANNER, "rt700");

  BufferDataLoader loader(model_pte, model_pte_len);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    return fail("Program::load", program.error());
  }
  PRINTF(HIL_FMT_PROGRAM_LOADED, static_cast<unsigned>(program->num_methods()));

  Result<const char*> method_name = program->get_method_name(HIL_METHOD_INDEX);
  if (!method_name.ok()) {
    return fail("get_method_name", method_name.error());
  }
  PRINTF(HIL_FMT_RUNNING_METHOD, method_name.get());
  Result<MethodMeta> meta = program->method_meta(method_name.get());
  if (!meta.ok()) {
    return fail("method_meta", meta.error());
  }

  hil::PeakAllocator method_allocator(sizeof(g_method_pool), g_method_pool);
  hil::PeakAllocator temp_allocator(sizeof(g_temp_pool), g_temp_pool);
  Result<HierarchicalAllocator*> planned =
      hil::make_planned_memory(meta.get(), method_allocator);
  if (!planned.ok()) {
    return fail("planned memory", planned.error());
  }
  MemoryManager memory_manager(&method_allocator, planned.get(), &temp_allocator);

  ETDumpGen etdump(Span<uint8_t>(g_etdump_buffer, sizeof(g_etdump_buffer)));
  Result<Method> method =
      program->load_method(method_name.get(), &memory_manager, &etdump);
  if (!method.ok()) {
    return fail("load_method", method.error());
  }
  PRINTF(HIL_MSG_METHOD_LOADED);

  PRINTF(HIL_MSG_PREPARING_INPUTS);
  Error err = hil::prepare_inputs(method.get(), meta.get(), method_allocator,
                                  HIL_INPUT_FILL_BYTE);
  if (err != Error::Ok) {
    return fail("prepare_inputs", err);
  }
  PRINTF(HIL_MSG_INPUTS_PREPARED);

  PRINTF(HIL_MSG_STARTING);
  for (unsigned i = 0; i < HIL_ITERATIONS; ++i) {
    const et_timestamp_t start = et_pal_current_ticks();
    err = method->execute();
    const et_timestamp_t end = et_pal_current_ticks();
    if (err != Error::Ok) {
      return fail("Method::execute", err);
    }
    g_inference_us[i] = ticks_to_us(start, end);
  }
  PRINTF(HIL_MSG_EXECUTED);

  PRINTF(HIL_FMT_FREQUENCY, static_cast<unsigned>(hil_core_clock_hz() / 1000000U));
  print_allocator("method_allocator", method_allocator);
  print_allocator("temp_allocator", temp_allocator);
  PRINTF(HIL_FMT_MODEL_ADDR, addr(model_pte), addr(model_pte + model_pte_len));
  PRINTF(HIL_FMT_MODEL_SIZE, static_cast<unsigned>(model_pte_len),
         static_cast<unsigned>(model_pte_len));
  PRINTF(HIL_FMT_OUTPUTS, static_cast<unsigned>(method->outputs_size()));
  for (unsigned i = 0; i < HIL_ITERATIONS; ++i) {
    PRINTF(HIL_FMT_INFERENCE_TIME, static_cast<unsigned>(g_inference_us[i]));
  }

  ETDumpResult result = etdump.get_etdump_data();
  if (result.buf == nullptr || result.size == 0) {
    return fail("get_etdump_data (no ETDump: is ET_EVENT_TRACER_ENABLED set?)",
                Error::NotFound);
  }
  PRINTF(HIL_FMT_RESULT_BUF, result.buf, result.size);
  hil_publish_etdump(result.buf, result.size);  // the debugger stops in hil_etdump_ready()

  PRINTF(HIL_MSG_PROGRAM_COMPLETE);
  return 0;
}
