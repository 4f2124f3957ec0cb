"""The emulated RT700 (`--board rt700-emu`): the bench image executed on unicorn's Cortex-M33, behind pyOCD.

One job per module: `rt700_map` (the RT700's memory map and what the emulation skips), `core` (the M33 on
unicorn: reset, run, halt, breakpoints, instruction count, fault entry), `peripherals` (the peripheral
register file and LPUART0 feeding a socket console), `debug_port` (the M33's debug registers: DHCSR,
DCRSR/DCRDR, DEMCR, AIRCR, DWT, FPB), `dap` (the SW-DP/AHB-AP and ROM table pyOCD discovers), `pyocd_target`
(the target type with the RT700 map and its flash) and `probe` (the pyOCD probe plugin and the server process).
"""
