/*
 * The few pieces of mps2-an505 hardware the QEMU images touch (the replay image, and the
 * runtime image through runtime/board_glue.c): the CMSDK UART that carries the console, and Arm
 * semihosting, through which the image hands QEMU its exit status.
 */
#ifndef HIL_QEMU_HW_H
#define HIL_QEMU_HW_H

#include <stddef.h>
#include <stdint.h>

void uart_init(void);
void uart_write(const char *data, size_t len);
void uart_puts(const char *text);
void uart_put_hex32(uint32_t value); /* always 8 digits, like %08x */
void uart_put_udec(uint32_t value);  /* like %u */
/* printf for the shared line protocol: %u and %x (32-bit), %s and %% only. */
void uart_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* SYS_EXIT_EXTENDED: QEMU (-semihosting-config enable=on) exits with `status`. Under the harness semihosting is
 * off: its debugger stops on this function's first instruction and reads `status` from r0 (hil.target.guest_exit). */
__attribute__((noreturn)) void semihost_exit(uint32_t status);

/* The replay image links no libc: the compiler's implicit calls land in freestanding.c. */
void *memcpy(void *dst, const void *src, size_t len);
void *memset(void *dst, int value, size_t len);

#endif
