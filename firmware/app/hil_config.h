/*
 * Build-time knobs of the et-hil profiling firmware (every board). Every one can be set from CMake
 * (-DHIL_METHOD_POOL_SIZE=... etc., see the boards' CMakeLists.txt) without editing the source.
 * The run count is not one of them: the harness writes it at run time (hil_result.h).
 */
#ifndef HIL_CONFIG_H
#define HIL_CONFIG_H

/* Which method of the program runs (0 is `forward` for a single-method export). */
#ifndef HIL_METHOD_INDEX
#define HIL_METHOD_INDEX 0
#endif

/* Method objects, planned buffers and input tensors (the "method_allocator" line). */
#ifndef HIL_METHOD_POOL_SIZE
#define HIL_METHOD_POOL_SIZE (512U * 1024U)
#endif

/* Kernel and delegate scratch memory (the "temp_allocator" line). */
#ifndef HIL_TEMP_POOL_SIZE
#define HIL_TEMP_POOL_SIZE (512U * 1024U)
#endif

/*
 * ETDumpGen's static buffer. The default heap is 64 KiB and ETDumpGen needs well over
 * 128 KiB when it allocates for itself, so it always gets this buffer instead.
 */
#ifndef HIL_ETDUMP_BUFFER_SIZE
#define HIL_ETDUMP_BUFFER_SIZE (512U * 1024U)
#endif

/*
 * Bounds on ETDumpGen's use of its buffer (method_setup.h, max_traced_runs): bytes per traced
 * event, per run (the run's block), and once per dump (header, builder stack, string pool).
 * Measured on the QEMU runtime image: see firmware/qemu/runtime/README.md.
 */
#ifndef HIL_ETDUMP_EVENT_BYTES
#define HIL_ETDUMP_EVENT_BYTES 160U
#endif
#ifndef HIL_ETDUMP_RUN_BYTES
#define HIL_ETDUMP_RUN_BYTES 256U
#endif
#ifndef HIL_ETDUMP_FIXED_BYTES
#define HIL_ETDUMP_FIXED_BYTES 16384U
#endif

/*
 * The fallback inputs: every byte of every tensor input is set to this value when no debugger
 * writes the inputs (hil_io.h); the console says so.
 */
#ifndef HIL_INPUT_FILL_BYTE
#define HIL_INPUT_FILL_BYTE 0x00
#endif

/*
 * Optional linker sections for the big buffers, e.g. -DHIL_POOL_SECTION=".ncache" to put them
 * in non-cacheable RAM. Empty: ordinary .bss.
 */
#ifdef HIL_POOL_SECTION
#define HIL_IN_POOL_SECTION __attribute__((section(HIL_POOL_SECTION)))
#else
#define HIL_IN_POOL_SECTION
#endif

#endif /* HIL_CONFIG_H */
