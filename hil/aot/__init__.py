"""Ahead-of-time stage: model specs -> .pte + ETRecord (+ example inputs), cached by content hash.

Submodules are imported by their users (`hil.aot.models`, `hil.aot.export`), not here, so that
importing `hil.aot` stays cheap and a cache hit never pays for torch.
"""
