"""The ETDump the QEMU replay image carries: from the host runtime, or simulated for a delegate.

Submodules are imported by their users; importing this package loads no framework.
"""
