/*
 * What the C library the image links lacks.
 *
 * Why: Debian's newlib-nano (libnewlib-arm-none-eabi, nano.specs) builds aligned_alloc() on top of
 * posix_memalign(), which nano's allocator does not provide, so any image that pulls in
 * aligned_alloc fails to link ("undefined reference to `posix_memalign'"). ExecuTorch's ETDump
 * writer does: flatcc's builder keeps aligned_alloc as its default allocator
 * (flatcc_builder_aligned_alloc). The firmware gives ETDumpGen a static buffer, so this path only
 * has to link and behave; it never runs in a normal profile.
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>

int posix_memalign(void **memptr, size_t alignment, size_t size)
{
    /* POSIX: a power of two and a multiple of sizeof(void *). */
    if (alignment == 0U || (alignment & (alignment - 1U)) != 0U || alignment % sizeof(void *) != 0U) {
        return EINVAL;
    }
    void *p = memalign(alignment, size);
    if (p == NULL) {
        return ENOMEM;
    }
    *memptr = p;
    return 0;
}
