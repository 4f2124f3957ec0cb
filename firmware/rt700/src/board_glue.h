/*
 * The only place the application touches the MCUXpresso board support and the NPU driver.
 *
 * Why a seam: the ExecuTorch-facing code is compile-checked on any machine against stand-in
 * headers (firmware/rt700/check/), and a user porting to another board edits one small file.
 */
#ifndef HIL_BOARD_GLUE_H
#define HIL_BOARD_GLUE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Bring the board up the way NXP's eIQ ExecuTorch example does (its hardware_init.c): pins,
 * AHB secure controller, PMIC VDD2 to 1.1 V, the HSRUN clock tree (the core and NPU at
 * 324/325 MHz), the debug console (LPUART0 via the MCU-Link VCOM, 115200 8N1), then power up the
 * NPU. Finally copy the model from its flash load image to its RAM address.
 */
void hil_board_init(void);

/* Start the Neutron driver (neutronInit); 0 on success, the driver's error code otherwise. */
int32_t hil_npu_init(void);

/* The Cortex-M33 core 0 clock in Hz, as the clock tree is configured now. */
uint32_t hil_core_clock_hz(void);

/* Enable the DWT cycle counter (DCB/CoreDebug DEMCR.TRCENA, DWT CTRL.CYCCNTENA) and zero it. */
void hil_cycle_counter_start(void);

/* The raw 32-bit DWT->CYCCNT; wraps every 2^32 core cycles (13 s at 324 MHz). */
uint32_t hil_cycle_counter_read(void);

#ifdef __cplusplus
}
#endif

#endif /* HIL_BOARD_GLUE_H */
