"""The RT700 image cache's keys (hil.firmware.rt700_runtime): which changes make a new build folder or a new image.

Checked against what the test sets up itself: two programs' bytes, two workspace folders; the keys are compared
with each other, not recomputed here.
"""

from __future__ import annotations

from pathlib import Path

from hil.firmware.rt700_runtime import _image_key, _runtime_key


def test_a_new_program_is_a_new_image_of_the_same_runtime_and_the_same_program_is_served_again(tmp_path: Path):
    runtime = _runtime_key(tmp_path, "arm-none-eabi-gcc 12.2.1", None)
    assert runtime == _runtime_key(tmp_path, "arm-none-eabi-gcc 12.2.1", None)
    first, second = _image_key(runtime, b"program one"), _image_key(runtime, b"program two")
    assert first != second and first == _image_key(runtime, b"program one")


def test_another_workspace_or_compiler_is_another_build_folder(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    base = _runtime_key(tmp_path / "a", "gcc 12", None)
    assert base != _runtime_key(tmp_path / "b", "gcc 12", None)  # the CMake cache names the workspace by path
    assert base != _runtime_key(tmp_path / "a", "gcc 13", None)
    assert _image_key(base, b"p") != _image_key(_runtime_key(tmp_path / "b", "gcc 12", None), b"p")
