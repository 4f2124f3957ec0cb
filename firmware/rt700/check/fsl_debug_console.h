/* Stand-in for the SDK's debug console (compile check only): PRINTF as printf-like. */
#ifndef FSL_DEBUG_CONSOLE_H_
#define FSL_DEBUG_CONSOLE_H_

#ifdef __cplusplus
extern "C" {
#endif

int DbgConsole_Printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#define PRINTF DbgConsole_Printf

#endif
