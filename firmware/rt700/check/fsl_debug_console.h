/* Stand-in for the SDK's debug console (compile check only): DbgConsole_Vprintf as vprintf-like. */
#ifndef FSL_DEBUG_CONSOLE_H_
#define FSL_DEBUG_CONSOLE_H_

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

int DbgConsole_Vprintf(const char *fmt, va_list args) __attribute__((format(printf, 1, 0)));
int DbgConsole_Printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#define PRINTF DbgConsole_Printf

#endif
