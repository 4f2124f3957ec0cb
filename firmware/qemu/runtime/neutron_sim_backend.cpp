/*
 * NeutronSimBackend on the emulated core: the runtime side of et-hil's simulated Neutron delegate
 * (hil/aot/neutron_sim.py), so a program lowered to it runs through the real runtime and ETDumpGen.
 *
 * It computes nothing (delegated outputs keep whatever their buffers held: the harness says so), but it
 * times like the board: execute() stands for neutronRunBlocking -- it reads the PAL before and after,
 * and in between waits until the simulated NPU's records have elapsed on the NPU timer -- then posts
 * the delegate events from its call's profile records (neutron_sim_table.h) with the algorithm of
 * ExecuTorch's backends/nxp/runtime/NeutronBackend.cpp (its ET_EVENT_TRACER_ENABLED block in execute()):
 * a record whose stop opCode is not KOPC_CALLARGS (6) is folded into the next posted event, whose start
 * is the first start seen since the last post; each CALLARGS record is posted with
 * delegate_debug_id = index++ and its own start stamp's functionCode as 1 byte of metadata; a last event
 * (id = index) spans the profiling dump, from the last record's start to its stop plus the PAL ticks
 * the call took, mixing NPU ticks and PAL ticks as upstream does.
 *
 * Why not upstream NeutronBackend.cpp over a simulated driver: it registers under the fixed id
 * "NeutronBackend" and accepts only a real Neutron microcode payload (magic 0x64434D6E, payload
 * versions 0 and 1), which a simulated program has not; making one would pass simulated programs off
 * as real ones in every table, and a simulated program keeps its own backend id on purpose.
 */
#include <cstdint>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/event_tracer_hooks_delegate.h>
#include <executorch/runtime/platform/platform.h>

#include "neutron_sim_table.h"

using executorch::runtime::ArrayRef;
using executorch::runtime::Backend;
using executorch::runtime::BackendExecutionContext;
using executorch::runtime::BackendInitContext;
using executorch::runtime::BackendInterface;
using executorch::runtime::CompileSpec;
using executorch::runtime::DelegateHandle;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::Result;
using executorch::runtime::Span;

namespace {

constexpr uint8_t kKopcCallargs = 6;  // NeutronBackend.cpp KOPC_CALLARGS
constexpr uint32_t kRecordBytes = 16;
constexpr uint32_t kStopOffset = 8;

uint32_t u32_at(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
      (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

/* One record of a call, its times moved to the NPU timer's value at launch. */
struct Record {
  const uint8_t* raw;
  uint32_t base;
  uint8_t stop_op() const { return raw[kStopOffset + 1]; }
  const uint8_t* start_function() const { return raw + 2; }
  uint32_t start() const { return base + u32_at(raw + 4); }
  uint32_t stop() const { return base + u32_at(raw + kStopOffset + 4); }
};

/* The NPU timer runs in step with the PAL counter, at num/den of its rate. */
uint32_t npu_ticks(et_timestamp_t pal) {
  return static_cast<uint32_t>(pal * hil_sim_npu_ticks_num / hil_sim_npu_ticks_den);
}

class NeutronSimBackend final : public BackendInterface {
 public:
  bool is_available() const override {
    return true;
  }

  Result<DelegateHandle*> init(
      BackendInitContext& context,
      FreeableBuffer* processed,
      ArrayRef<CompileSpec> compile_specs) const override {
    (void)context;
    (void)compile_specs;
    // Method::init initialises the delegates in program order, as the table lists them.
    static uint32_t next = 0;
    if (next >= hil_sim_delegate_count) {
      ET_LOG(Error, "NeutronSimBackend: delegate call %u has no records in this image (it has %u)",
             static_cast<unsigned>(next), static_cast<unsigned>(hil_sim_delegate_count));
      return Error::InvalidProgram;
    }
    processed->Free();  // the payload's kernels are already in the table
    return reinterpret_cast<DelegateHandle*>(const_cast<hil_sim_delegate*>(&hil_sim_delegates[next++]));
  }

  Error execute(
      BackendExecutionContext& context,
      DelegateHandle* handle,
      Span<EValue*> args) const override {
    (void)args;  // outputs are not computed: the simulated NPU only takes time
    const auto* call = reinterpret_cast<const hil_sim_delegate*>(handle);
    if (call->record_count == 0) {
      return Error::InvalidProgram;
    }
    const et_timestamp_t start_ticks = et_pal_current_ticks();
    const uint32_t base = npu_ticks(start_ticks);
    const Record last{call->records + (call->record_count - 1) * kRecordBytes, base};
    // neutronRunBlocking: the CPU waits until the NPU's last record has stopped.
    while (static_cast<int32_t>(npu_ticks(et_pal_current_ticks()) - last.stop()) < 0) {
    }
    const et_timestamp_t stop_ticks = et_pal_current_ticks();

    executorch::runtime::EventTracer* tracer = context.event_tracer();
    uint32_t start_time = 0;
    int index = 0;
    for (uint32_t i = 0; i < call->record_count; ++i) {
      const Record record{call->records + i * kRecordBytes, base};
      if (start_time == 0) {
        start_time = record.start();
      }
      if (record.stop_op() != kKopcCallargs) {
        continue;
      }
      executorch::runtime::event_tracer_log_profiling_delegate(
          tracer, nullptr, index, start_time, record.stop(), record.start_function(), sizeof(uint8_t));
      start_time = 0;
      ++index;
    }
    executorch::runtime::event_tracer_log_profiling_delegate(
        tracer, nullptr, index, last.start(), last.stop() + stop_ticks - start_ticks,
        last.start_function(), sizeof(uint8_t));
    return Error::Ok;
  }
};

NeutronSimBackend g_backend;
Backend g_backend_id{"NeutronSimBackend", &g_backend};
const auto g_registered = executorch::runtime::register_backend(g_backend_id);

}  // namespace
