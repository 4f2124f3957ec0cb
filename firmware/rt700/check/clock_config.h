/* Stand-in for the board's clock_config.h (compile check only). */
#ifndef _CLOCK_CONFIG_H_
#define _CLOCK_CONFIG_H_

#ifdef __cplusplus
extern "C" {
#endif

void BOARD_InitBootClocks(void);

#ifdef __cplusplus
}
#endif

#endif
