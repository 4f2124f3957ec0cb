/*
 * hil_printf, and sizes in ExecuTorch's log lines.
 *
 * Why the vsnprintf wrapper: ExecuTorch formats every ET_LOG message with vsnprintf, and its
 * formats print sizes with `%zu` (ET_PRIsize_t). newlib-nano's formatter knows no `z` or `t`
 * length modifier and prints "zu" instead of the number, so an out-of-memory line would not say
 * what was asked for. On this 32-bit target size_t and ptrdiff_t are int-sized, so the same value
 * prints right once the modifier is dropped: the image links with -Wl,--wrap=vsnprintf and every
 * vsnprintf call comes here first.
 */
#include "hil_console.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "board_glue.h"

_Static_assert(sizeof(size_t) == sizeof(unsigned int), "dropping %z is only right where size_t is int-sized");
_Static_assert(sizeof(ptrdiff_t) == sizeof(int), "dropping %t is only right where ptrdiff_t is int-sized");

/* Longer formats are passed through unchanged (none of ExecuTorch's comes close). */
#define HIL_FORMAT_MAX 256

int __real_vsnprintf(char *out, size_t size, const char *format, va_list args);

/* Whether `c` ends a conversion specification (a conversion letter, not a length modifier). */
static int ends_conversion(char c)
{
    const int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return c == '%' || (letter && c != 'h' && c != 'l' && c != 'j' && c != 'L' && c != 'q');
}

/* `format` with the z and t length modifiers of its conversions dropped, into `out`; 0 if too long. */
static int drop_size_modifiers(const char *format, char *out, size_t size)
{
    size_t n = 0;
    int in_spec = 0;
    for (const char *p = format; *p != '\0'; ++p) {
        const char c = *p;
        if (in_spec && (c == 'z' || c == 't')) {
            continue;
        }
        if (n + 1 >= size) {
            return 0;
        }
        out[n++] = c;
        if (!in_spec) {
            in_spec = c == '%';
        } else if (ends_conversion(c)) {
            in_spec = 0;
        }
    }
    out[n] = '\0';
    return 1;
}

int __wrap_vsnprintf(char *out, size_t size, const char *format, va_list args)
{
    char plain[HIL_FORMAT_MAX];
    if (format != NULL && drop_size_modifiers(format, plain, sizeof(plain))) {
        return __real_vsnprintf(out, size, plain, args);
    }
    return __real_vsnprintf(out, size, format, args);
}

void hil_printf(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    hil_console_vprintf(format, args);
    va_end(args);
}
