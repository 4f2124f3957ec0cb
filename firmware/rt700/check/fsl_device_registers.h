/*
 * Stand-in for the device header chain (fsl_device_registers.h -> MIMXRT798S_cm33_core0.h ->
 * core_cm33.h), compile check only: the CMSIS names the firmware uses, at the Armv8-M addresses.
 * Mirrors CMSIS 5's CoreDebug spelling; the firmware also accepts CMSIS 6's DCB.
 */
#ifndef _FSL_DEVICE_REGISTERS_H_
#define _FSL_DEVICE_REGISTERS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    volatile uint32_t CTRL;   /* 0x000 */
    volatile uint32_t CYCCNT; /* 0x004 */
} DWT_Type;

typedef struct {
    volatile uint32_t DHCSR; /* 0x000 */
    volatile uint32_t DCRSR; /* 0x004 */
    volatile uint32_t DCRDR; /* 0x008 */
    volatile uint32_t DEMCR; /* 0x00C */
} CoreDebug_Type;

#define DWT ((DWT_Type *)0xE0001000UL)
#define CoreDebug ((CoreDebug_Type *)0xE000EDF0UL)
#define DWT_CTRL_CYCCNTENA_Msk (1UL << 0)
#define CoreDebug_DEMCR_TRCENA_Msk (1UL << 24)

extern uint32_t SystemCoreClock;
void SystemCoreClockUpdate(void);

#ifdef __cplusplus
}
#endif

#endif
