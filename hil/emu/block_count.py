"""How the emulated core counts the instructions it executes (DWT CYCCNT): per translation block, exactly.

Why native: a Python UC_HOOK_BLOCK callback costs a trip into the interpreter per block, which held the emulator
to ~2-2.6 M instructions/s. hil/emu/block_count.c does the same count in C: the host gcc builds it once into
$HIL_CACHE_DIR/emu/ (keyed by the source's sha256), ctypes loads it and unicorn's own uc_hook_add registers its
function pointer. Where no gcc can build it, the Python hook counts instead (the same figures, slower) after a
one-line warning. Both say which block ran last, so a stop inside it can take back the instructions after the
stopping one (`starts_of_current_block`); that decode happens only at stops, in Python.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from unicorn import UC_HOOK_BLOCK, Uc, UcError
from unicorn.unicorn_py3 import unicorn as uc_binding

from hil.base.paths import cache_dir

SOURCE = Path(__file__).with_name("block_count.c")
BUILD_TIMEOUT_S = 60


def thumb_starts(code: bytes, address: int) -> tuple[int, ...]:
    """The address of each Thumb instruction in `code` (a halfword 0b11101/0b11110/0b11111 opens a 32-bit one)."""
    starts, offset = [], 0
    while offset + 1 < len(code):
        starts.append(address + offset)
        offset += 4 if (code[offset + 1] >> 3) in (0x1D, 0x1E, 0x1F) else 2
    return tuple(starts)


class _Counter(ctypes.Structure):
    """struct counter of block_count.c (the fields Python reads; the C side owns the rest)."""

    _fields_ = [("executed", ctypes.c_uint64), ("block_address", ctypes.c_uint64), ("block_size", ctypes.c_uint32),
                ("decodes", ctypes.c_uint32), ("failures", ctypes.c_uint32)]


def native_library() -> Path:
    """The shared object built from block_count.c, built on first use; RuntimeError in one line if it cannot be."""
    source = SOURCE.read_bytes()
    target = cache_dir() / "emu" / f"block_count-{hashlib.sha256(source).hexdigest()[:24]}.so"
    if target.exists():
        return target
    gcc = shutil.which(os.environ.get("CC", "gcc"))
    if gcc is None:
        raise RuntimeError("no host C compiler (gcc) on PATH to build hil/emu/block_count.c")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    try:
        done = subprocess.run([gcc, "-O2", "-shared", "-fPIC", "-o", str(partial), str(SOURCE)],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"gcc took over {BUILD_TIMEOUT_S} s to build hil/emu/block_count.c") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        raise RuntimeError(f"gcc could not build hil/emu/block_count.c: {first}")
    os.replace(partial, target)  # atomic: a parallel worker sees the whole library or none
    return target


class BlockCounter:
    """Instructions executed, counted per translation block by the native hook or, failing that, a Python one."""

    def __init__(self, uc: Uc, *, counting: str = "native") -> None:
        """`counting`: "native", "python" (the fallback, forced), or "none" (no hook: the bench's uncounted run)."""
        self._decoded: dict[tuple[int, int], tuple[int, ...]] = {}
        self._c: Any = None
        self.native = False
        self._executed = 0
        self._block: tuple[int, int] = (0, 0)
        if counting == "native":
            try:
                self._install_native(uc)
            except (OSError, RuntimeError, UcError) as error:
                print(f"hil: emulated RT700 counts instructions with a Python hook (slower): {error}",
                      file=sys.stderr)
        if counting != "none" and not self.native:
            uc.hook_add(UC_HOOK_BLOCK, self._on_block)

    def _install_native(self, uc: Uc) -> None:
        lib = ctypes.CDLL(str(native_library()))
        lib.hil_counter_new.restype = ctypes.POINTER(_Counter)
        lib.hil_counter_new.argtypes = [ctypes.c_void_p]
        lib.hil_counter_forget.argtypes = [ctypes.POINTER(_Counter)]
        lib.hil_counter_free.argtypes = [ctypes.POINTER(_Counter)]
        counter = lib.hil_counter_new(ctypes.cast(uc_binding.uclib.uc_mem_read, ctypes.c_void_p))
        if not counter:
            raise RuntimeError("out of memory for the native instruction counter")
        handle = uc_binding.uc_hook_h()
        status = uc_binding.uclib.uc_hook_add(uc._uch, ctypes.byref(handle), UC_HOOK_BLOCK,
                                              ctypes.cast(lib.hil_on_block, ctypes.c_void_p),
                                              ctypes.cast(counter, ctypes.c_void_p), ctypes.c_uint64(1),
                                              ctypes.c_uint64(0))
        if status != 0:
            lib.hil_counter_free(counter)
            raise UcError(status)
        self._lib, self._c, self.native = lib, counter, True
        self._free = lib.hil_counter_free  # the Uc outlives no BlockCounter: freed with it (__del__)

    def __del__(self) -> None:
        if self._c is not None:
            self._free(self._c)
            self._c = None

    def _on_block(self, uc: Uc, address: int, size: int, _data: Any) -> None:
        self._block = (address, size)
        self._executed += len(self._starts(uc, address, size))

    def _starts(self, uc: Uc, address: int, size: int) -> tuple[int, ...]:
        starts = self._decoded.get((address, size))
        if starts is None:
            starts = self._decoded[(address, size)] = thumb_starts(bytes(uc.mem_read(address, size)), address)
        return starts

    @property
    def executed(self) -> int:
        if self.native:
            counter = self._c.contents
            if counter.failures:
                raise RuntimeError(f"the native instruction counter could not read {counter.failures} block(s)")
            return counter.executed
        return self._executed

    @executed.setter
    def executed(self, value: int) -> None:
        if self.native:
            self._c.contents.executed = value
        else:
            self._executed = value

    @property
    def decodes(self) -> int | None:
        """Blocks the native hook decoded (its cache misses); None for the Python hook."""
        return self._c.contents.decodes if self.native else None

    def starts_of_current_block(self, uc: Uc) -> tuple[int, ...]:
        """The instruction addresses of the block entered last (empty once `leave_block` ran)."""
        if self.native:
            counter = self._c.contents
            address, size = counter.block_address, counter.block_size
        else:
            address, size = self._block
        return self._starts(uc, address, size) if size else ()

    def leave_block(self) -> None:
        """The current block's instructions are settled (taken back or stepped): a later stop takes none back."""
        if self.native:
            self._c.contents.block_size = 0
        else:
            self._block = (0, 0)

    def forget(self) -> None:
        """Code changed or the core was reset: decode every block afresh."""
        self._decoded.clear()
        if self.native:
            self._lib.hil_counter_forget(self._c)
