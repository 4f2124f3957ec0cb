"""The road every board travels: process lifecycles, the serial console reader and the GDB/MI session.

Boards compose these pieces (QEMU and RT700 alike) instead of copying them, so a fix to how a
console is captured or how GDB is driven reaches every target at once.
"""
