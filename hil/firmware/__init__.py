"""Firmware images: the QEMU replay image built here, and the toolchain lookup builds share."""
