/* Stand-in for the MIMXRT798S fsl_power.h (compile check only): the calls that power the NPU. */
#ifndef _FSL_POWER_H_
#define _FSL_POWER_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Only the names matter here; the SDK's own values are used by `make firmware`. */
typedef enum {
    kPDRUNCFG_APD_NPU = 1,
    kPDRUNCFG_PPD_NPU = 2,
} pd_bit_t;

void POWER_DisablePD(pd_bit_t en);
void POWER_ApplyPD(void);

#ifdef __cplusplus
}
#endif

#endif
