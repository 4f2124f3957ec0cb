"""et-hil: profile ExecuTorch models on an i.MX RT700 board, or on a Cortex-M33 in QEMU without one.

The packages are layered, each importing only those below it (hil.layers holds the order): hil.base,
hil.records, hil.config, the domain packages (target, probe, analysis, aot, lab, numerics, replay, drift,
boards, firmware, regress, report), hil.run, and the front ends hil.cli and hil.plugin.
"""

__version__ = "0.1.0"
