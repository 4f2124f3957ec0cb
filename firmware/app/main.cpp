/*
 * et-hil profiling firmware: the application every board runs (the RT700 and QEMU's mps2-an505).
 *
 * Brings up the board (and its NPU, if any), loads the compiled-in ExecuTorch program and its
 * method under an ETDumpGen event tracer, takes the run count from the harness (the
 * run-configuration handshake of firmware/common/hil_result.h: one image serves any count it can
 * hold) and its inputs (the tensor handshake of firmware/common/hil_io.h: the harness writes the
 * bytes, else a fill byte stays and the console says so), runs warm-up + iterations inferences,
 * each on the same inputs, publishes the outputs in `hil_io`, and hands the ETDump to
 * the harness: it prints the line protocol (firmware/common/hil_protocol.h), publishes {buf, size}
 * in `hil_etdump_result` and calls `hil_etdump_ready()`, where the harness's debugger stops and
 * dumps the bytes. Built with HIL_DEBUG_BUFFER_SIZE > 0 (hil_config.h) it also records every
 * operator's outputs in a debug buffer, published in `hil_debug_result` beside the ETDump. What
 * differs between boards is behind board_glue.h.
 */
#include <cstdint>
#include <new>

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
#include "etdump_frames.h"
#include "hil_config.h"
#include "hil_console.h"
#include "hil_crc32.h"
#include "hil_protocol.h"
#include "hil_result.h"
#include "hil_stack.h"
#include "io_tables.h"
#include "method_setup.h"
#include "model_data.h"
#include "peak_allocator.h"

using executorch::etdump::ETDumpGen;
using executorch::etdump::ETDumpResult;
using executorch::extension::BufferDataLoader;
using executorch::runtime::Error;
using executorch::runtime::EventTracerDebugLogLevel;
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
uint32_t g_inference_us[HIL_MAX_RUNS];
#if HIL_DEBUG_BUFFER_SIZE > 0
// 64-byte aligned as ETDumpGen's data sink aligns each tensor: offsets then follow from the program alone.
alignas(64) HIL_IN_POOL_SECTION uint8_t g_debug_buffer[HIL_DEBUG_BUFFER_SIZE];
#endif

/* Says what failed on the console and ends the program (the harness then sees no breakpoint). */
int fail(const char* what, Error err) {
  hil_printf(HIL_FMT_ERROR, what, static_cast<unsigned>(err));
  hil_printf(HIL_MSG_PROGRAM_FAILED);
  return 1;
}

unsigned addr(const void* p) {
  return static_cast<unsigned>(reinterpret_cast<uintptr_t>(p));
}

/* The `<name>_used:` line of a pool of `total` bytes of which `used` were used. */
void print_usage(const char* name, unsigned total, unsigned used) {
  hil_printf(HIL_FMT_ALLOCATOR_USED, name, total, total, used, used,
             total == 0 ? 0U : static_cast<unsigned>(100ULL * used / total));
}

void print_allocator(const char* name, const hil::PeakAllocator& a) {
  const unsigned total = a.size();
  hil_printf(HIL_FMT_ALLOCATOR_ADDR, name, addr(a.base_address()),
             addr(a.base_address() + total));
  print_usage(name, total, static_cast<unsigned>(a.peak_size()));
}

/*
 * Intermediate outputs (HIL_DEBUG_BUFFER_SIZE > 0): ETDumpGen copies every kernel's out tensors and
 * the program's outputs into the debug buffer. Without a buffer, nothing: the profiling image.
 */
bool enable_debug_outputs(ETDumpGen& etdump) {
#if HIL_DEBUG_BUFFER_SIZE > 0
  if (!etdump.set_debug_buffer(Span<uint8_t>(g_debug_buffer, sizeof(g_debug_buffer))).ok()) {
    return false;
  }
  etdump.set_event_tracer_debug_level(EventTracerDebugLogLevel::kIntermediateOutputs);
#else
  (void)etdump;
#endif
  return true;
}

/* Publish the debug buffer's used bytes (and print them, with their CRC-32) before the ETDump's breakpoint. */
void publish_debug_outputs(ETDumpGen& etdump) {
#if HIL_DEBUG_BUFFER_SIZE > 0
  const size_t used = etdump.get_data_sink()->get_used_bytes();
  print_usage("debug_buffer", static_cast<unsigned>(sizeof(g_debug_buffer)), static_cast<unsigned>(used));
  hil_printf(HIL_FMT_DEBUG_BUF, addr(g_debug_buffer), static_cast<unsigned>(used),
             static_cast<unsigned>(hil_crc32(g_debug_buffer, used)));
  hil_publish_debug_buffer(g_debug_buffer, used);
#else
  (void)etdump;
#endif
}

/* Microseconds between two PAL tick readings, by the same ratio the ETDump uses, to the nearest. */
uint32_t ticks_to_us(et_timestamp_t start, et_timestamp_t end) {
  const et_tick_ratio_t r = et_pal_ticks_to_ns_multiplier();
  const uint64_t ns = (end - start) * r.numerator / r.denominator;
  return static_cast<uint32_t>((ns + 500U) / 1000U);
}

/* The run count: from the harness's debugger when it wrote one, else 1 measured run (said on the console). */
bool take_run_config(uint32_t& iterations, uint32_t& warmup) {
  iterations = 1U;
  warmup = 0U;
  const int taken = hil_take_run_config(&iterations, &warmup);
  if (taken < 0) {
    hil_printf(HIL_FMT_RUN_CONFIG_REFUSED, static_cast<unsigned>(hil_run_config.iterations),
           static_cast<unsigned>(hil_run_config.warmup), static_cast<unsigned>(hil_run_config.max_runs));
    return false;
  }
  hil_printf(HIL_FMT_RUN_CONFIG, static_cast<unsigned>(iterations), static_cast<unsigned>(warmup),
         taken > 0 ? HIL_RUN_CONFIG_FROM_DEBUGGER : HIL_RUN_CONFIG_DEFAULTS);
  return true;
}

/*
 * The streamed transport (hil_etdump_stream): print this batch's inference times and its ETDump in
 * frames, then start a fresh ETDumpGen over the same buffer for the next batch. A new one, not
 * ETDumpGen::reset(): reset() rewinds the flatcc builder but not the static allocator's write
 * cursor, so every batch would eat into the buffer. The method keeps its pointer to `etdump`: the
 * object is replaced in place. Returns the dump's size (0: no dump).
 */
size_t stream_batch(ETDumpGen& etdump, hil_frame_stream& stream, uint32_t count) {
  for (uint32_t k = 0; k < count; ++k) {
    hil_printf(HIL_FMT_INFERENCE_TIME, static_cast<unsigned>(g_inference_us[k]));
  }
  ETDumpResult result = etdump.get_etdump_data();
  if (result.buf == nullptr || result.size == 0) {
    return 0;
  }
  hil_emit_etdump(&stream, static_cast<const uint8_t*>(result.buf), result.size, count);
  etdump.~ETDumpGen();
  new (&etdump) ETDumpGen(Span<uint8_t>(g_etdump_buffer, sizeof(g_etdump_buffer)));
  return result.size;
}

}  // namespace

int main(void) {
#ifndef HIL_STACK_PAINTED_AT_RESET
  // The RT700's reset handler is NXP's SDK start-up, which this project does not change: the stack is
  // painted here, below main's frame (hil_stack.h); QEMU's startup.c paints it at reset instead.
  hil_stack_paint(HIL_STACK_PAINT_MARGIN);
#endif
  hil_board_init();
  executorch::runtime::runtime_init();  // et_pal_init(): starts the cycle counter
  hil_printf(HIL_FMT_BANNER, hil_board_name);
  // The Neutron driver must be up before the delegate's init() prepares its model.
  const int32_t npu = hil_npu_init();
  if (npu != 0) {
    hil_printf(HIL_FMT_ERROR, "neutronInit", static_cast<unsigned>(npu));  // a NeutronError code
    hil_printf(HIL_MSG_PROGRAM_FAILED);
    return 1;
  }
  // The RT700's neutronInit (neutronPrivateFwInit) sets DWT CYCCNT to 0 after et_pal_init started it: the PAL's
  // 64-bit extension would read that as a wrap. Restart the counter and its extension together, before any event.
  et_pal_init();
  BufferDataLoader loader(model_pte, model_pte_len);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    return fail("Program::load", program.error());
  }
  hil_printf(HIL_FMT_PROGRAM_LOADED, static_cast<unsigned>(program->num_methods()));

  Result<const char*> method_name = program->get_method_name(HIL_METHOD_INDEX);
  if (!method_name.ok()) {
    return fail("get_method_name", method_name.error());
  }
  hil_printf(HIL_FMT_RUNNING_METHOD, method_name.get());
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
  if (!enable_debug_outputs(etdump)) {
    return fail("ETDumpGen::set_debug_buffer", Error::InvalidArgument);
  }
  Result<Method> method =
      program->load_method(method_name.get(), &memory_manager, &etdump);
  if (!method.ok()) {
    return fail("load_method", method.error());
  }
  hil_printf(HIL_MSG_METHOD_LOADED);

  // The input buffers exist before the handshake: the harness writes their bytes there (hil_io.h).
  hil_printf(HIL_MSG_PREPARING_INPUTS);
  hil::InputSet inputs;
  Error err = hil::prepare_inputs(method.get(), meta.get(), method_allocator,
                                  HIL_INPUT_FILL_BYTE, inputs);
  if (err != Error::Ok) {
    return fail("prepare_inputs", err);
  }
  if (!hil::publish_inputs(inputs)) {
    hil_printf(HIL_MSG_PROGRAM_FAILED);
    return 1;
  }

  // The count this image can trace is known now: the harness reads it at the handshake.
  hil_run_config.max_runs = hil::max_traced_runs(meta.get(), sizeof(g_etdump_buffer), HIL_MAX_RUNS);
  uint32_t iterations = 0;
  uint32_t warmup = 0;
  if (!take_run_config(iterations, warmup)) {
    hil_printf(HIL_MSG_PROGRAM_FAILED);
    return 1;
  }
  hil::take_inputs(inputs, HIL_INPUT_FILL_BYTE);
  hil_printf(HIL_MSG_INPUTS_PREPARED);

  // Streamed: one dump per batch of at most max_runs runs (none fits in a debug buffer's offsets).
  const bool streamed = hil_etdump_stream != 0U;
  const uint32_t batch = streamed ? hil_run_config.max_runs : warmup + iterations;
  if (streamed && (batch == 0U || HIL_DEBUG_BUFFER_SIZE > 0)) {
    return fail("ETDump stream (no run fits the ETDump buffer, or a debug buffer is built in)", Error::NotSupported);
  }
  if (streamed) {
    hil_printf(HIL_FMT_STREAM_START, static_cast<unsigned>(batch));
  }
  hil_frame_stream stream = {0U, 0U};
  size_t streamed_peak = 0;

  hil_printf(HIL_MSG_STARTING);
  const uint32_t runs = warmup + iterations;
  for (uint32_t i = 0; i < runs; ++i) {
    // The memory planner may reuse an input's buffer for an intermediate: every run starts from
    // the inputs again, copied in outside the timed part (and outside Method::execute's event).
    err = hil::reload_inputs(method.get(), inputs);
    if (err != Error::Ok) {
      return fail("set_input", err);
    }
    const et_timestamp_t start = et_pal_current_ticks();
    err = method->execute();
    const et_timestamp_t end = et_pal_current_ticks();
    if (err != Error::Ok) {
      return fail("Method::execute", err);
    }
    g_inference_us[i % batch] = ticks_to_us(start, end);
    if (streamed && ((i + 1U) % batch == 0U || i + 1U == runs)) {
      const uint32_t count = (i % batch) + 1U;
      const size_t size = stream_batch(etdump, stream, count);
      if (size == 0) {
        return fail("get_etdump_data (no ETDump: is ET_EVENT_TRACER_ENABLED set?)", Error::NotFound);
      }
      streamed_peak = size > streamed_peak ? size : streamed_peak;
    }
  }
  hil_printf(HIL_MSG_EXECUTED);
  if (!hil::publish_outputs(method.get())) {  // read by the harness at hil_etdump_ready
    hil_printf(HIL_MSG_PROGRAM_FAILED);
    return 1;
  }

  hil_printf(HIL_FMT_FREQUENCY, static_cast<unsigned>(hil_core_clock_hz() / 1000000U));
  print_allocator("method_allocator", method_allocator);
  print_allocator("temp_allocator", temp_allocator);
  hil_printf(HIL_FMT_MODEL_ADDR, addr(model_pte), addr(model_pte + model_pte_len));
  hil_printf(HIL_FMT_MODEL_SIZE, static_cast<unsigned>(model_pte_len),
         static_cast<unsigned>(model_pte_len));
  hil_printf(HIL_FMT_OUTPUTS, static_cast<unsigned>(method->outputs_size()));
  if (streamed) {  // the times went out with their batches; the outputs are read at hil_etdump_ready
    print_usage("etdump_buffer", static_cast<unsigned>(sizeof(g_etdump_buffer)), static_cast<unsigned>(streamed_peak));
    hil_printf(HIL_FMT_STREAM_END, static_cast<unsigned>(stream.dumps), static_cast<unsigned>(stream.frames),
               static_cast<unsigned>(runs));
    hil_publish_etdump(nullptr, 0);
    hil_printf(HIL_MSG_PROGRAM_COMPLETE);
    return 0;
  }
  for (uint32_t i = 0; i < runs; ++i) {  // warm-up runs first, as in the ETDump
    hil_printf(HIL_FMT_INFERENCE_TIME, static_cast<unsigned>(g_inference_us[i]));
  }

  ETDumpResult result = etdump.get_etdump_data();
  if (result.buf == nullptr || result.size == 0) {
    return fail("get_etdump_data (no ETDump: is ET_EVENT_TRACER_ENABLED set?)",
                Error::NotFound);
  }
  publish_debug_outputs(etdump);  // its lines first: the harness reads the debug buffer first
  // What of the ETDump buffer this run's dump takes (the harness reads it with the allocators).
  print_usage("etdump_buffer", static_cast<unsigned>(sizeof(g_etdump_buffer)), static_cast<unsigned>(result.size));
  hil_printf(HIL_FMT_RESULT_BUF, addr(result.buf), static_cast<unsigned>(result.size),
         static_cast<unsigned>(hil_crc32(result.buf, result.size)));
  hil_publish_etdump(result.buf, result.size);  // the debugger stops in hil_etdump_ready()

  hil_printf(HIL_MSG_PROGRAM_COMPLETE);
  return 0;
}
