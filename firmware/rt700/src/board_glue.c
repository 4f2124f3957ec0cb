/*
 * Board support for the MIMXRT700-EVK (MIMXRT798S, Cortex-M33 core 0), from the MCUXpresso SDK.
 */
#include "board_glue.h"

#include "board.h"
#include "clock_config.h"
#include "fsl_device_registers.h"
#include "pin_mux.h"

#if defined(HIL_BOARD_SPLIT_INIT)
/* Older SDK examples: the three steps are called one by one. */
void hil_board_init(void)
{
    BOARD_InitBootPins();
    BOARD_InitBootClocks();
    BOARD_InitDebugConsole();
}
#else
/* SDK 26.06 examples: each example's hardware_init.c provides this (pins, clocks, console). */
void BOARD_InitHardware(void);

void hil_board_init(void)
{
    BOARD_InitHardware();
}
#endif

uint32_t hil_core_clock_hz(void)
{
    SystemCoreClockUpdate();
    return SystemCoreClock;
}

void hil_cycle_counter_start(void)
{
    /* TRCENA powers the DWT. CMSIS 6 names the debug block DCB; CMSIS 5 calls it CoreDebug. */
#if defined(DCB)
    DCB->DEMCR |= DCB_DEMCR_TRCENA_Msk;
#else
    CoreDebug->DEMCR |= CoreDebug_DEMCR_TRCENA_Msk;
#endif
    DWT->CYCCNT = 0U;
    DWT->CTRL |= DWT_CTRL_CYCCNTENA_Msk;
}

uint32_t hil_cycle_counter_read(void)
{
    return DWT->CYCCNT;
}
