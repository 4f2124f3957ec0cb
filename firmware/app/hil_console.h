/*
 * The application's console output: printf formats of the line protocol (hil_protocol.h), sent
 * through the board's console (hil_console_vprintf in board_glue.h).
 */
#ifndef HIL_CONSOLE_H
#define HIL_CONSOLE_H

#ifdef __cplusplus
extern "C" {
#endif

void hil_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#endif /* HIL_CONSOLE_H */
