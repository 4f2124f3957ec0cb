/*
 * The model program, compiled in by `python -m hil.firmware.model_array MODEL.pte OUT.c`:
 * a 16-byte aligned array in the `.modeldata` section (0x20430000 in the RT700 link script).
 */
#ifndef HIL_MODEL_DATA_H
#define HIL_MODEL_DATA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

extern const unsigned char model_pte[];
extern const size_t model_pte_len;

#ifdef __cplusplus
}
#endif

#endif /* HIL_MODEL_DATA_H */
