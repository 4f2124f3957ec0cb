/* Stand-in for the eIQ example's pin_mux.h (compile check only). */
#ifndef _PIN_MUX_H_
#define _PIN_MUX_H_

#ifdef __cplusplus
extern "C" {
#endif

void BOARD_InitPins(void);     /* debug console (LPUART0) pins */
void BOARD_InitPmicPins(void); /* the PMIC's I2C pins */

#ifdef __cplusplus
}
#endif

#endif
