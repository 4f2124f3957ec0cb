/*
 * The debugger handshakes (see hil_result.h). Kept apart from the application so that any firmware
 * -- the RT700 app, the QEMU replay image, a user's own -- links the same symbols with the same
 * guarantees.
 */
#include "hil_result.h"

/*
 * `used` keeps the compiler from dropping them even if only the debugger reads or writes them. The
 * linker's --gc-sections still drops what nothing references: hil_take_run_config() and
 * hil_publish_etdump() reference all four, so a firmware that calls both keeps them all (the QEMU
 * replay image relies on exactly that to build its no-handshake variant).
 */
__attribute__((used)) volatile struct hil_etdump_result_t hil_etdump_result;
__attribute__((used)) volatile struct hil_etdump_result_t hil_debug_result;
__attribute__((used)) volatile struct hil_run_config_t hil_run_config = {0u, 0u, 0u, HIL_MAX_RUNS};
__attribute__((used)) volatile uint32_t hil_etdump_stream;

/*
 * noipa: the optimiser may not inline, clone or drop them, so a breakpoint on either name always
 * hits one real address; the asm body gives each an effect and orders the surrounding stores.
 */
__attribute__((noinline, noipa, used)) void hil_config_ready(void)
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noipa, used)) void hil_etdump_ready(void)
{
    __asm__ volatile("" ::: "memory");
}

int hil_take_run_config(uint32_t *iterations, uint32_t *warmup)
{
    hil_config_ready();
    if (hil_run_config.magic != HIL_RUN_CONFIG_MAGIC) {
        return 0;
    }
    hil_run_config.magic = 0u;
    const uint32_t runs = hil_run_config.iterations;
    const uint32_t warm = hil_run_config.warmup;
    const uint32_t limit = hil_etdump_stream != 0u ? UINT32_MAX : hil_run_config.max_runs;
    if (runs == 0u || warm > limit || runs > limit - warm) {
        return -1;
    }
    *iterations = runs;
    *warmup = warm;
    return 1;
}

void hil_publish_etdump(void *buf, size_t size)
{
    hil_etdump_result.buf = buf;
    hil_etdump_result.size = size;
    hil_etdump_ready();
}

void hil_publish_debug_buffer(void *buf, size_t size)
{
    hil_debug_result.buf = buf;
    hil_debug_result.size = size;
}
