/*
 * What the shared application needs from a board: the only interface between firmware/app/ and a
 * board's own sources (firmware/rt700/src/board_glue.c, firmware/qemu/runtime/board_glue.c).
 *
 * Why a seam: one application (program load, planned memory, ETDumpGen, the handshakes, the
 * iteration loop, the line protocol) runs on every board, so what CI runs on the emulated
 * Cortex-M33 is what a bench flashes; a user porting to another board writes one small file.
 */
#ifndef HIL_BOARD_GLUE_H
#define HIL_BOARD_GLUE_H

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The board's name on the banner line ("rt700", "qemu-mps2-an505"). */
extern const char hil_board_name[];

/* Clocks, console, and whatever the board needs before the runtime starts (RT700: PMIC, HSRUN
 * clock tree, NPU power, the model's copy from flash to RAM; QEMU: FPU access, UART). */
void hil_board_init(void);

/* Start the NPU driver (neutronInit on the RT700); 0 on success or when the board has no NPU,
 * else the driver's error code. */
int32_t hil_npu_init(void);

/* The rate of the PAL tick counter in Hz, printed as `Core/NPU Frequency` (RT700: the core clock,
 * which the DWT cycle counter counts; QEMU: the 20 MHz clock of its FPGAIO counter). */
uint32_t hil_core_clock_hz(void);

/* Start the PAL tick counter from zero, and read its raw 32-bit value (it wraps). */
void hil_cycle_counter_start(void);
uint32_t hil_cycle_counter_read(void);

/* Print to the console the harness captures (printf formats of the line protocol). */
void hil_console_vprintf(const char *format, va_list args);

/* End the program with `status` after a failure the firmware cannot go on from (QEMU: exits with
 * that status; a board without an exit waits for the debugger). Never returns. */
__attribute__((noreturn)) void hil_board_exit(int status);

#ifdef __cplusplus
}
#endif

#endif /* HIL_BOARD_GLUE_H */
