"""Talking to a target: process lifecycles, QEMU, the serial console reader, the GDB/MI session, the
firmware's debugger handshakes (run configuration, tensor I/O, ETDump read-out) and crash forensics.

Boards compose these pieces (QEMU and RT700 alike) instead of copying them, so a fix to how a
console is captured or how GDB is driven reaches every target at once.
"""
