/*
 * The ExecuTorch platform hooks of every et-hil board: time from the board's tick counter (the
 * RT700's DWT cycle counter, QEMU's FPGAIO counter), logs to the console, and an abort the
 * harness can see.
 *
 * Why: the event tracer stamps every event with et_pal_current_ticks() and the Inspector turns
 * ticks into time with et_pal_ticks_to_ns_multiplier(). The default bare-metal PAL returns
 * constants, which makes every ETDump timestamp meaningless, and its et_pal_abort() is a trap
 * that ends in a fault with the reason lost. These strong definitions replace the weak defaults
 * (runtime/platform/default/minimal.cpp) at link time.
 */
#include <executorch/runtime/platform/platform.h>

#include "board_glue.h"
#include "hil_console.h"
#include "hil_protocol.h"

namespace {

uint64_t g_cycles_high = 0;  // wraps of the 32-bit counter seen so far, << 32
uint32_t g_cycles_last = 0;  // last raw CYCCNT value read
et_tick_ratio_t g_ratio = {1, 1};

uint64_t gcd(uint64_t a, uint64_t b) {
  while (b != 0) {
    const uint64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

}  // namespace

/* Exit status of a firmware that ExecuTorch aborted (QEMU's exit status). */
constexpr int kExitAborted = 4;

/*
 * Starts the tick counter and fixes the tick ratio for the current core clock. Called by
 * runtime_init() through et_pal_init(); safe to call again after a clock change.
 */
void et_pal_init(void) {
  hil_cycle_counter_start();
  g_cycles_high = 0;
  g_cycles_last = 0;
  const uint64_t hz = hil_core_clock_hz();
  if (hz != 0) {
    // ns = ticks * 1e9 / hz; reduced (e.g. 250/81 at 324 MHz) so the product stays in
    // 64 bits for far longer than any profiling run.
    const uint64_t g = gcd(1000000000ULL, hz);
    g_ratio.numerator = 1000000000ULL / g;
    g_ratio.denominator = hz / g;
  }
}

/*
 * The raw 32-bit counter extended to 64 bits: a smaller raw value than last time means one wrap.
 * Correct as long as it is called at least once per wrap period (13 s at 324 MHz on the RT700,
 * 214 s of virtual time on QEMU); the event tracer calls it for every operator.
 */
et_timestamp_t et_pal_current_ticks(void) {
  const uint32_t now = hil_cycle_counter_read();
  if (now < g_cycles_last) {
    g_cycles_high += (uint64_t{1} << 32);
  }
  g_cycles_last = now;
  return g_cycles_high | now;
}

et_tick_ratio_t et_pal_ticks_to_ns_multiplier(void) {
  return g_ratio;
}

/* ExecuTorch's ET_LOG lines go to the same console the harness captures. */
void et_pal_emit_log_message(
    et_timestamp_t timestamp,
    et_pal_log_level_t level,
    const char* filename,
    const char* function,
    size_t line,
    const char* message,
    size_t length) {
  (void)timestamp;
  (void)function;
  hil_printf("%c [executorch:%s:%u] %.*s\r\n", static_cast<char>(level), filename,
         static_cast<unsigned>(line), static_cast<int>(length), message);
}

/*
 * ExecuTorch gave up (ET_CHECK, an out-of-memory ETDump emitter, ...): its ET_LOG line with the
 * reason is already on the console. Say that the program failed, in the line protocol, and end it,
 * so the harness reports the reason instead of waiting for a breakpoint that never comes.
 */
void et_pal_abort(void) {
  hil_printf(HIL_FMT_ERROR, "ExecuTorch (aborted: see the log line above)", 0U);
  hil_printf(HIL_MSG_PROGRAM_FAILED);
  hil_board_exit(kExitAborted);
}
