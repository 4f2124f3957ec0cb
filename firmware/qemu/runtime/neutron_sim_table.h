/*
 * The simulated Neutron backend's table (generated per program by hil/firmware/sim_neutron_table.py):
 * per delegate call, in the program's order, the 16-byte Neutron profile records the cost model
 * gives, with times counted from 0 in NPU timer ticks; and the NPU timer's ticks per PAL tick.
 */
#ifndef HIL_NEUTRON_SIM_TABLE_H
#define HIL_NEUTRON_SIM_TABLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hil_sim_delegate {
    uint32_t record_count;
    const uint8_t *records; /* record_count x {start, stop} x {u8 event, u8 op, u8 function, u8 ts, u32 time} */
};

extern const uint32_t hil_sim_delegate_count;
extern const struct hil_sim_delegate hil_sim_delegates[];
extern const uint32_t hil_sim_npu_ticks_num; /* NPU timer ticks per PAL tick = num / den */
extern const uint32_t hil_sim_npu_ticks_den;

#ifdef __cplusplus
}
#endif

#endif /* HIL_NEUTRON_SIM_TABLE_H */
