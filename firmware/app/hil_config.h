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
 * Intermediate outputs (`--hil-debug-outputs`): with a size > 0, ETDumpGen gets a debug buffer of
 * this many bytes at the intermediate-outputs level, so every kernel's out tensors (and the
 * program's outputs) of every run are copied there, 64-byte aligned, and the ETDump's debug
 * events point into it. 0: no buffer, no debug events (the profiling image). The harness sizes it
 * from the board file and refuses a program whose runs would not fit before flashing
 * (hil.drift.debug_size).
 */
#ifndef HIL_DEBUG_BUFFER_SIZE
#define HIL_DEBUG_BUFFER_SIZE 0U
#endif

/*
 * ETDump events per instruction that max_traced_runs() reserves: a profiling event for the
 * instruction and one for its operator; with the debug buffer, room for two more (the debug
 * events of an operator's out tensors: max_pool2d_with_indices has two).
 */
#ifndef HIL_ETDUMP_EVENTS_PER_INSTRUCTION
#if HIL_DEBUG_BUFFER_SIZE > 0
#define HIL_ETDUMP_EVENTS_PER_INSTRUCTION 4U
#else
#define HIL_ETDUMP_EVENTS_PER_INSTRUCTION 2U
#endif
#endif

/* Every byte of every tensor input is set to this value (0: all-zero inputs). */
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
