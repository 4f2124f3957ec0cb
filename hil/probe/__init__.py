"""The RT700 lab bench's debug probe: pyOCD flashing, the pyocd gdbserver process, and the per-probe lock.

pyOCD is imported lazily inside these modules (importing it costs ~0.6 s), so `import hil.probe`
stays cheap for the QEMU-only paths and the CLI's `--help`.
"""
