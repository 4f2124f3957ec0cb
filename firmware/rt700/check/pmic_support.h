/* Stand-in for the board's pmic_support.h (compile check only). */
#ifndef _PMIC_SUPPORT_H_
#define _PMIC_SUPPORT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void BOARD_InitPmic(void);
void BOARD_SetPmicVdd2Voltage(uint32_t volt);

#ifdef __cplusplus
}
#endif

#endif
