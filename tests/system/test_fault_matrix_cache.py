"""The fault matrix, continued: a damaged cache entry, run as a user runs it (`hil ...` in a child).

Each row damages one entry of a private cache (HIL_CACHE_DIR) the way a full disk or a killed copy
would, and asserts that the next run passes (exit status 0 within the matrix's generous bound),
says so in exactly one line naming the entry, serves bytes whose sha256 (hashlib, here) is what the
entry held when it was made, keeps its run folder and leaves no QEMU, gdb or debug server behind
(the `hil` fixture). Before, the damaged entry was served to every later run, which failed (exit 2,
blamed on the run folder's model.pte, or 3, a link error) and never recovered. A read-only cache
cannot drop its bad entry: that is exit 3, one line naming it and the command that clears it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from runtime_workspace import needs_runtime
from test_fault_matrix import RUN, Hil, first_line, hil, manifest  # noqa: F401  (hil: the fixture)
from test_fault_matrix_readers import read_only
from tiny_models import linear_relu_source

# The simulated NPU's ETDump comes from its cost model, the same every run: the replay image is a cache hit.
REPLAY = ("run", "--board", "qemu", "--model", "cifar10", "--delegate", "neutron-sim", "--quantize", "--iterations",
          "1", "--firmware", "replay")
RUNTIME = (*RUN, "--iterations", "1", "--firmware", "runtime")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def recovery_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "failed its check" in line or "fails its check" in line]


def recorded(entry: Path, name: str) -> dict:
    return json.loads((entry / "sha256.json").read_text())["files"][name]


@pytest.fixture(scope="module")
def replay_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A private cache holding cifar10's export and its replay image, and the first run's folder."""
    cache = tmp_path_factory.mktemp("replay-cache")
    runner = Hil()
    runner.env["HIL_CACHE_DIR"] = str(cache)
    out = tmp_path_factory.mktemp("first") / "run"
    done, _ = runner(*REPLAY, "--out", str(out))
    assert done.returncode == 0, done.stderr
    yield cache, out


def cached_pte(cache: Path) -> Path:
    [pte] = (cache / "models").glob("*/*/model.pte")
    return pte


# --- row 13: a damaged cache entry is rebuilt, and says so ------------------------------------------

def test_a_truncated_cached_pte_is_exported_again_and_the_run_passes(hil, replay_cache, tmp_path):
    cache, first = replay_cache
    hil.env["HIL_CACHE_DIR"] = str(cache)
    pte = cached_pte(cache)
    good = pte.read_bytes()
    pte.write_bytes(good[:1000])  # what a full disk left of it
    out = tmp_path / "run"
    done, elapsed = hil(*REPLAY, "--out", str(out))
    assert done.returncode == 0 and elapsed < 300, done.stderr  # was: exit 2, blamed on <out>/model.pte
    assert recovery_lines(done.stderr) == [f"[hil] cache entry {pte.parent} (exported model) failed its check: "
                                           f"model.pte is 1000 bytes, {len(good)} when written; removed, building "
                                           "it again"]
    assert sha256(out / "model.pte") == hashlib.sha256(good).hexdigest() == sha256(first / "model.pte")
    assert sha256(cached_pte(cache)) == recorded(cached_pte(cache).parent, "model.pte")["sha256"]
    kept = manifest(out)
    assert kept["status"] == "passed" and kept["aot_cached"] is False
    done, _ = hil(*REPLAY, "--out", str(tmp_path / "again"))  # served from the rebuilt entry, quietly
    assert done.returncode == 0 and recovery_lines(done.stderr) == [] and manifest(tmp_path / "again")["aot_cached"]


def test_a_damaged_replay_image_is_built_again_and_the_run_passes(hil, replay_cache, tmp_path):
    cache, first = replay_cache
    hil.env["HIL_CACHE_DIR"] = str(cache)
    elf = Path(manifest(first)["firmware"])
    data = bytearray(elf.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: the size is what it was
    elf.write_bytes(bytes(data))
    out = tmp_path / "run"
    done, elapsed = hil(*REPLAY, "--out", str(out))
    assert done.returncode == 0 and elapsed < 300, done.stderr
    [line] = recovery_lines(done.stderr)
    assert line.startswith(f"[hil] cache entry {elf.parent} (QEMU replay image) failed its check: firmware.elf has "
                           f"sha256 {hashlib.sha256(bytes(data)).hexdigest()[:16]}...")
    kept = manifest(out)
    assert kept["status"] == "passed" and kept["firmware"] == str(elf)
    assert kept["firmware_sha256"] == sha256(elf) == recorded(elf.parent, "firmware.elf")["sha256"]
    assert sha256(elf) != hashlib.sha256(bytes(data)).hexdigest()


def test_a_read_only_cache_with_a_bad_entry_is_refused_naming_it_and_how_to_clear_it(hil, replay_cache, tmp_path):
    cache, _ = replay_cache
    hil.env["HIL_CACHE_DIR"] = str(cache)
    pte = cached_pte(cache)
    size = pte.stat().st_size
    pte.write_bytes(b"")
    out = tmp_path / "run"
    done, elapsed = hil(*REPLAY, "--out", str(out), prefix=read_only(cache))
    assert done.returncode == 3 and elapsed < 120  # the machine's fault, not the user's input
    says = (f"hil run: cache entry {pte.parent} (exported model) fails its check: model.pte is 0 bytes, {size} when "
            "written; the cache cannot be written (Read-only file system), so it is not rebuilt: clear it with "
            f"`rm -rf {pte.parent}`, or point HIL_CACHE_DIR at a writable copy of the cache")
    assert first_line(done) == says and [line for line in done.stderr.splitlines() if "hil run:" in line] == [says]
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error"] == says.removeprefix("hil run: ")
    assert kept["error_kind"] == "CacheFault" and not (out / "model.pte").exists()
    assert pte.stat().st_size == 0  # left as it was
    done, elapsed = hil(*REPLAY, "--out", str(out))  # the same cache, writable again: rebuilt
    assert done.returncode == 0 and elapsed < 300 and len(recovery_lines(done.stderr)) == 1, done.stderr


# --- the runtime image: its ELF and the runtime's libraries, in a private cache (one cold build) ------

@pytest.fixture(scope="module")
def runtime_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    cache = tmp_path_factory.mktemp("runtime-cache")
    runner = Hil()
    runner.env["HIL_CACHE_DIR"] = str(cache)
    out = tmp_path_factory.mktemp("first-runtime") / "run"
    done, _ = runner(*RUNTIME, "--out", str(out), timeout=1800)  # builds the runtime's libraries: minutes
    assert done.returncode == 0, done.stderr
    yield cache, out


@needs_runtime
def test_a_truncated_runtime_elf_is_linked_again_and_the_run_passes(hil, runtime_cache, tmp_path):
    cache, first = runtime_cache
    hil.env["HIL_CACHE_DIR"] = str(cache)
    elf = Path(manifest(first)["firmware"])
    good = elf.read_bytes()
    elf.write_bytes(good[: len(good) // 2])
    out = tmp_path / "run"
    done, elapsed = hil(*RUNTIME, "--out", str(out), timeout=900)
    assert done.returncode == 0 and elapsed < 600, done.stderr
    assert recovery_lines(done.stderr) == [f"[hil] cache entry {elf.parent} (QEMU runtime image) failed its check: "
                                           f"{elf.name} is {len(good) // 2} bytes, {len(good)} when written; removed, "
                                           "building it again"]
    kept = manifest(out)
    assert kept["status"] == "passed" and kept["firmware"] == str(elf) and kept["firmware_kind"] == "runtime"
    assert elf.stat().st_size == len(good) and kept["firmware_sha256"] == sha256(elf) == recorded(elf.parent,
                                                                                                  elf.name)["sha256"]


@needs_runtime
def test_a_damaged_runtime_library_is_archived_again_and_the_next_image_links(hil, runtime_cache, tmp_path):
    cache, _ = runtime_cache
    hil.env["HIL_CACHE_DIR"] = str(cache)
    [root] = (cache / "firmware" / "qemu-runtime").iterdir()
    library = root / "build" / "executorch" / "libexecutorch.a"
    good = library.read_bytes()
    library.write_bytes(good[:4096])
    (tmp_path / "tiny.py").write_text(linear_relu_source(inputs=12, outputs=5, seed=32))  # a new image: a link
    out = tmp_path / "run"
    done, elapsed = hil("run", "--board", "qemu", "--model", f"{tmp_path / 'tiny.py'}:factory", "--no-delegate",
                        "--iterations", "1", "--firmware", "runtime", "--out", str(out), timeout=900)
    assert done.returncode == 0 and elapsed < 600, done.stderr  # was: exit 3, the link failed, for every image
    assert recovery_lines(done.stderr) == [f"[hil] cache entry {root / 'build'} (QEMU runtime libraries) failed its "
                                           "check: build/executorch/libexecutorch.a is 4096 bytes, "
                                           f"{len(good)} when written; removed 1 library, archiving again from their "
                                           "objects"]
    assert hashlib.sha256(library.read_bytes()).hexdigest() == hashlib.sha256(good).hexdigest()  # the same archive
    assert recorded(root, "build/executorch/libexecutorch.a")["sha256"] == hashlib.sha256(good).hexdigest()
    kept = manifest(out)
    assert kept["status"] == "passed" and kept["firmware_kind"] == "runtime"
