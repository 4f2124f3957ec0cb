/*
 * The only place the application touches the MCUXpresso board support.
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

/* Pins, clocks and the debug console (LPUART0 via the MCU-Link VCOM, 115200 8N1). */
void hil_board_init(void);

/* The Cortex-M33 core 0 clock in Hz, as the clock tree is configured now. */
uint32_t hil_core_clock_hz(void);

/* Enable the DWT cycle counter (CoreDebug/DCB DEMCR.TRCENA, DWT CTRL.CYCCNTENA) and zero it. */
void hil_cycle_counter_start(void);

/* The raw 32-bit DWT->CYCCNT; wraps every 2^32 core cycles (13 s at 324 MHz). */
uint32_t hil_cycle_counter_read(void);

#ifdef __cplusplus
}
#endif

#endif /* HIL_BOARD_GLUE_H */
