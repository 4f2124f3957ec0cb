"""A cache entry's record and check (hil.base.entry_check, hil.base.cache_entry) and the caches that use it:
the export cache, the QEMU replay image and the runtime's static libraries (a real Ninja build of a small
archive). Sizes and digests are computed here with hashlib, not by the module under test."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import textwrap
from pathlib import Path

import pytest

from hil.base.cache_entry import served
from hil.base.entry_check import RECORD_NAME, check, seal
from hil.firmware.runtime_libraries import library_names, record_libraries, repair_libraries


def _entry(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "model.pte").write_bytes(bytes(range(256)) * 40)
    (folder / "meta.json").write_text('{"name": "m"}\n')
    seal(folder)
    return folder


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "hil" and r.levelno == logging.WARNING]


def test_the_record_holds_each_files_size_and_sha256_and_a_sound_entry_passes(tmp_path):
    entry = _entry(tmp_path / "e")
    data = (entry / "model.pte").read_bytes()
    record = json.loads((entry / RECORD_NAME).read_text())
    assert record["files"]["model.pte"] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert set(record["files"]) == {"model.pte", "meta.json"}
    verdict = check(entry)
    assert verdict.sound and verdict.recorded and verdict.problem == ""


def test_a_truncated_file_is_named_with_both_sizes(tmp_path):
    entry = _entry(tmp_path / "e")
    (entry / "model.pte").write_bytes((entry / "model.pte").read_bytes()[:1000])
    verdict = check(entry)
    assert not verdict.sound and verdict.problem == "model.pte is 1000 bytes, 10240 when written"


def test_a_file_changed_in_place_at_its_size_fails_its_sha256(tmp_path):
    entry = _entry(tmp_path / "e")
    data = bytearray((entry / "model.pte").read_bytes())
    data[5000] ^= 0xFF
    (entry / "model.pte").write_bytes(bytes(data))
    verdict = check(entry)
    assert not verdict.sound
    assert verdict.problem.startswith(f"model.pte has sha256 {hashlib.sha256(bytes(data)).hexdigest()[:16]}...")


@pytest.mark.parametrize(("damage", "says"), [
    (lambda e: (e / "model.pte").unlink(), "model.pte is missing"),
    (lambda e: (e / "late.bin").write_bytes(b"x"), f"late.bin is not in its {RECORD_NAME}"),
    (lambda e: (e / RECORD_NAME).write_text('{"schema": "et-hil/cache-entry/1", "fi'), f"its {RECORD_NAME} is damaged"),
])
def test_a_missing_file_a_file_written_after_the_record_and_a_damaged_record_fail(tmp_path, damage, says):
    entry = _entry(tmp_path / "e")
    damage(entry)
    verdict = check(entry)
    assert not verdict.sound and verdict.recorded and verdict.problem.startswith(says)


def test_an_entry_without_a_record_is_told_apart(tmp_path):
    entry = _entry(tmp_path / "e")
    (entry / RECORD_NAME).unlink()
    verdict = check(entry)
    assert not verdict.sound and not verdict.recorded and "older et-hil" in verdict.problem


def test_a_bad_entry_is_removed_with_one_line_naming_it_and_a_sound_one_is_served(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="hil")
    sound, bad = _entry(tmp_path / "sound"), _entry(tmp_path / "bad")
    (bad / "model.pte").write_bytes(b"")
    assert served(sound, "exported model") and _warnings(caplog) == []
    assert not served(bad, "exported model")
    assert not bad.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["sound"]  # nothing left aside
    assert _warnings(caplog) == [f"cache entry {bad} (exported model) failed its check: model.pte is 0 bytes, 10240 "
                                 "when written; removed, building it again"]
    assert not served(tmp_path / "never-made", "exported model") and len(_warnings(caplog)) == 1


# --- the export cache ---------------------------------------------------------------------------------

MODEL = textwrap.dedent(
    """
    import torch

    def factory():
        torch.manual_seed(3)
        return torch.nn.Sequential(torch.nn.Linear(4, 3)), (torch.ones(1, 4),)
    """
)


def test_a_truncated_cached_pte_is_exported_again(tmp_path, caplog):
    from hil.aot.export import export_model

    caplog.set_level(logging.WARNING, logger="hil")
    (tmp_path / "m.py").write_text(MODEL)
    spec, cache = f"{tmp_path / 'm.py'}:factory", tmp_path / "cache"
    first = export_model(spec, cache=cache)
    good = first.pte_path.read_bytes()
    record = json.loads((first.pte_path.parent / RECORD_NAME).read_text())
    assert record["files"]["model.pte"]["sha256"] == hashlib.sha256(good).hexdigest()
    assert set(record["files"]) == {"model.pte", "etrecord.bin", "inputs.pt", "meta.json", "reads.json"}
    assert export_model(spec, cache=cache).cached
    first.pte_path.write_bytes(good[: len(good) // 2])
    again = export_model(spec, cache=cache)
    assert not again.cached and again.pte_path.read_bytes() == good  # the same program, exported anew
    assert _warnings(caplog) == [f"cache entry {first.pte_path.parent} (exported model) failed its check: model.pte "
                                 f"is {len(good) // 2} bytes, {len(good)} when written; removed, building it again"]
    assert export_model(spec, cache=cache).cached and len(_warnings(caplog)) == 1


# --- the QEMU replay image ----------------------------------------------------------------------------

def test_a_damaged_replay_image_is_built_again(tmp_path, caplog):
    from hil.firmware.qemu_image import build_qemu_image

    caplog.set_level(logging.WARNING, logger="hil")
    elf = build_qemu_image(bytes(range(64)), ["line"], runs=1, cache=tmp_path)
    size = elf.stat().st_size
    data = bytearray(elf.read_bytes())
    data[size // 2] ^= 0x01
    elf.write_bytes(bytes(data))
    assert build_qemu_image(bytes(range(64)), ["line"], runs=1, cache=tmp_path) == elf
    rebuilt = elf.read_bytes()
    assert len(rebuilt) == size and rebuilt[:4] == b"\x7fELF" and rebuilt != bytes(data)
    record = json.loads((elf.parent / RECORD_NAME).read_text())
    assert record["files"][elf.name]["sha256"] == hashlib.sha256(rebuilt).hexdigest()
    [line] = _warnings(caplog)
    assert line.startswith(f"cache entry {elf.parent} (QEMU replay image) failed its check: firmware.elf has sha256")


# --- the runtime's static libraries: a real Ninja build of one archive --------------------------------

NINJA = textwrap.dedent(
    """\
    rule CC
      command = cc -c $in -o $out
    rule C_STATIC_LIBRARY_LINKER__tiny_Release
      command = rm -f $out && ar qcD $out $in
    build obj/tiny.o: CC ../tiny.c
    build libtiny.a: C_STATIC_LIBRARY_LINKER__tiny_Release obj/tiny.o
    """
)


def _ninja(build: Path) -> None:
    import subprocess

    subprocess.run(["ninja", "-C", str(build)], check=True, capture_output=True, timeout=60)


@pytest.fixture
def runtime(tmp_path) -> tuple[Path, Path]:
    if shutil.which("ninja") is None or shutil.which("cc") is None:
        pytest.skip("no ninja or host cc")
    root, build = tmp_path / "runtime", tmp_path / "runtime" / "build"
    build.mkdir(parents=True)
    (root / "tiny.c").write_text("int tiny(void) { return 7; }\n")
    (build / "build.ninja").write_text(NINJA)
    _ninja(build)
    return root, build


def test_a_damaged_runtime_library_is_archived_again(runtime, caplog):
    root, build = runtime
    caplog.set_level(logging.WARNING, logger="hil")
    good = (build / "libtiny.a").read_bytes()
    assert library_names(root, build) == ["build/libtiny.a"]  # the archive, not the object
    record_libraries(root, build)
    assert json.loads((root / RECORD_NAME).read_text())["files"]["build/libtiny.a"]["sha256"] == \
        hashlib.sha256(good).hexdigest()
    assert repair_libraries(root, build) == [] and _warnings(caplog) == []
    (build / "libtiny.a").write_bytes(good[:100])
    assert repair_libraries(root, build) == ["build/libtiny.a"] and not (build / "libtiny.a").exists()
    _ninja(build)
    assert (build / "libtiny.a").read_bytes() == good  # Ninja made it again from its object
    assert _warnings(caplog) == [f"cache entry {build} (QEMU runtime libraries) failed its check: build/libtiny.a is "
                                 f"100 bytes, {len(good)} when written; removed 1 library, archiving again from their "
                                 "objects"]


def test_libraries_built_without_a_record_are_archived_again_once(runtime, caplog):
    root, build = runtime
    caplog.set_level(logging.WARNING, logger="hil")
    assert repair_libraries(root, build) == ["build/libtiny.a"]  # an older et-hil's folder
    assert "no sha256.json record of its libraries" in _warnings(caplog)[0]
    _ninja(build)
    record_libraries(root, build)
    assert repair_libraries(root, build) == [] and len(_warnings(caplog)) == 1
