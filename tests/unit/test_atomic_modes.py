"""Published files take the mode the umask gives a plain open(), not mkstemp's private 0600."""

from __future__ import annotations

import os
import stat

import pytest

from hil.base import atomic
from hil.aot.cache import staged_dir


@pytest.mark.parametrize(("mask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750),
                                                             (0o002, 0o664, 0o775)])
def test_modes_follow_the_umask(tmp_path, mask, file_mode, dir_mode):
    old = os.umask(mask)
    try:
        written = atomic.write_json(tmp_path / "profile.json", {"a": 1})
        with staged_dir(tmp_path / "entry") as staging:
            (staging / "model.pte").write_bytes(b"x")
        (tmp_path / "plain.txt").write_text("reference")  # what open() gives under this umask
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == file_mode == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)
    assert stat.S_IMODE((tmp_path / "entry").stat().st_mode) == dir_mode
