"""et-hil: profile ExecuTorch models on an i.MX RT700 board, or on a Cortex-M33 in QEMU without one."""

__version__ = "0.1.0"

# Packages renamed in this release keep their old import paths for one release (hil.moved).
from hil import moved as _moved

_moved.install()
