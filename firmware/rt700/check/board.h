/* Stand-in for the mimxrt700evk board.h (compile check only). */
#ifndef _BOARD_H_
#define _BOARD_H_

#include "fsl_device_registers.h"

#ifdef __cplusplus
extern "C" {
#endif

void BOARD_InitDebugConsole(void);
void BOARD_InitAHBSC(void);

#ifdef __cplusplus
}
#endif

#endif
