/*
 * Board support for the MIMXRT700-EVK (MIMXRT798S, Cortex-M33 core 0 + eIQ Neutron NPU),
 * on the MCUXpresso SDK: the RT700's side of firmware/app/board_glue.h, and the only file of the
 * image that touches the SDK.
 */
#include "board_glue.h"

#include <string.h>

#include "board.h"
#include "fsl_debug_console.h"
#include "clock_config.h"
#include "fsl_device_registers.h"
#include "fsl_power.h"
#include "pin_mux.h"
#include "pmic_support.h"

/* VDD2 for the HSRUN clock tree: NXP's eIQ examples set 1.1 V before BOARD_BootClockHSRUN(). */
#define HIL_VDD2_HSRUN_UV 1100000U

/* The Neutron driver's entry point (ExecuTorch backends/nxp/runtime/NeutronDriver.h: NeutronError is an int32_t). */
extern int32_t neutronInit(void);

/* The model's load image in flash and its RAM home (link/hil_rt700_flash.ld). */
extern unsigned char __hil_model_load__[];
extern unsigned char __hil_model_start__[];
extern unsigned char __hil_model_end__[];

const char hil_board_name[] = "rt700";

void hil_board_init(void)
{
    BOARD_InitPins();
    BOARD_InitAHBSC();

    BOARD_InitPmicPins();
    BOARD_InitPmic();
    BOARD_SetPmicVdd2Voltage(HIL_VDD2_HSRUN_UV);
    BOARD_BootClockHSRUN();
    BOARD_InitDebugConsole();

    /* The NPU RAMs: array (APD) and periphery (PPD) power-downs off, as NXP's eIQ examples do
     * (MIMXRT798S fsl_power.h: kPDRUNCFG_APD_NPU, kPDRUNCFG_PPD_NPU); ApplyPD makes it take effect. */
    POWER_DisablePD(kPDRUNCFG_APD_NPU);
    POWER_DisablePD(kPDRUNCFG_PPD_NPU);
    POWER_ApplyPD();

    memcpy(__hil_model_start__, __hil_model_load__, (size_t)(__hil_model_end__ - __hil_model_start__));
}

int32_t hil_npu_init(void)
{
    return neutronInit();
}

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

void hil_console_vprintf(const char *format, va_list args)
{
    (void)DbgConsole_Vprintf(format, args);
}

/* No one to hand a status to: stay here, where the debugger finds the core (the console already
 * said why). */
void hil_board_exit(int status)
{
    (void)status;
    for (;;) {
        __asm__ volatile("wfi");
    }
}
