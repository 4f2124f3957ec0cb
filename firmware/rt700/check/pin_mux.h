/* Stand-in for the example's pin_mux.h (compile check only). */
#ifndef _PIN_MUX_H_
#define _PIN_MUX_H_

#ifdef __cplusplus
extern "C" {
#endif

void BOARD_InitBootPins(void);

#ifdef __cplusplus
}
#endif

#endif
