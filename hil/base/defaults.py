"""The defaults a user can see in more than one front end (CLI, pytest options, ini settings), each once."""

from __future__ import annotations

# Inferences profiled per run when nothing says otherwise: the fewest that show a run's own spread.
DEFAULT_ITERATIONS = 5
# Fewer iterations than this cannot show a run's own spread: the profile and a comparison say so.
MIN_ITERATIONS = 5
# Seconds an export of a user's model may take when neither the caller nor the board file says
# (`--export-timeout`, `[aot].export_timeout_s`): a cold export of an MLPerf-Tiny model on a loaded
# two-core machine takes about a minute.
DEFAULT_EXPORT_TIMEOUT_S = 600.0
# The fault handlers the debugger breaks on when a board file names none (`[debug].fault_handlers`):
# the names of CMSIS and NXP's MCUXpresso startup code (and of the QEMU replay image).
DEFAULT_FAULT_HANDLERS = (
    "HardFault_Handler", "MemManage_Handler", "BusFault_Handler", "UsageFault_Handler", "SecureFault_Handler",
)
