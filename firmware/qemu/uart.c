/*
 * Console over CMSDK UART0 (secure alias 0x50200000, which QEMU routes to serial0).
 * A tiny formatter instead of printf keeps the image free of newlib, small and fast to build;
 * uart_printf() knows just enough (%u, %x, %s, %%) to print the shared line protocol
 * (firmware/common/hil_protocol.h) from the very format strings the RT700 firmware uses.
 */
#include <stdarg.h>

#include "hw.h"

#define UART0_BASE 0x50200000u

typedef struct {
    volatile uint32_t data;
    volatile uint32_t state; /* bit 0: TX buffer full */
    volatile uint32_t ctrl;  /* bit 0: TX enable */
    volatile uint32_t intstatus;
    volatile uint32_t bauddiv;
} cmsdk_uart_t;

#define UART0 ((cmsdk_uart_t *)UART0_BASE)

void uart_init(void)
{
    UART0->bauddiv = 16u; /* the smallest divider the CMSDK UART accepts */
    UART0->ctrl = 1u;
}

static void uart_putc(char c)
{
    while (UART0->state & 1u) {
    }
    UART0->data = (uint8_t)c;
}

void uart_write(const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uart_putc(data[i]);
    }
}

void uart_puts(const char *text)
{
    while (*text) {
        uart_putc(*text++);
    }
}

void uart_put_hex32(uint32_t value)
{
    static const char digits[] = "0123456789abcdef";
    for (int shift = 28; shift >= 0; shift -= 4) {
        uart_putc(digits[(value >> shift) & 0xfu]);
    }
}

void uart_put_udec(uint32_t value)
{
    char text[10];
    int n = 0;
    do {
        text[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    while (n > 0) {
        uart_putc(text[--n]);
    }
}

/* Like %x: lower-case hex without leading zeros ("0" for zero). */
static void uart_put_hex(uint32_t value)
{
    int shift = 28;
    while (shift > 0 && ((value >> shift) & 0xfu) == 0u) {
        shift -= 4;
    }
    for (; shift >= 0; shift -= 4) {
        uart_putc("0123456789abcdef"[(value >> shift) & 0xfu]);
    }
}

void uart_printf(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    for (const char *p = format; *p != '\0'; p++) {
        if (*p != '%') {
            uart_putc(*p);
            continue;
        }
        switch (*++p) {
        case 'u':
            uart_put_udec((uint32_t)va_arg(args, unsigned int));
            break;
        case 'x':
            uart_put_hex((uint32_t)va_arg(args, unsigned int));
            break;
        case 's':
            uart_puts(va_arg(args, const char *));
            break;
        case '%':
            uart_putc('%');
            break;
        case '\0':
            p--; /* a lone '%' at the end: stop at the terminator */
            break;
        default: /* not supported: show it as written, so a wrong format is visible on the console */
            uart_putc('%');
            uart_putc(*p);
            break;
        }
    }
    va_end(args);
}
