/* Stand-in for the board's common/clock/cm33_core0/clock_config.h (compile check only). */
#ifndef _CLOCK_CONFIG_H_
#define _CLOCK_CONFIG_H_

#ifdef __cplusplus
extern "C" {
#endif

void BOARD_BootClockHSRUN(void);

#ifdef __cplusplus
}
#endif

#endif
