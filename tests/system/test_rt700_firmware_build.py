"""The RT700 firmware built and linked for real, then checked, from the pinned upstream workspace.

The build needs the source workspace `hil sources` assembles (ExecuTorch, the MCUXpresso SDK pieces
for mimxrt700evk, the Neutron libraries; firmware/rt700/pins.toml). `make test` assembles it (CI from its
lab mirror, HIL_GIT_BASE) and names it in RT700_SDK_DIR; a machine that has neither the network nor a
mirror skips this test and says why. It runs `hil rt700-image` (which runs
firmware/rt700/rt700.mk's `firmware` target) exactly as docs/lab-bench.md tells a user to. A cold
build takes 4-9 minutes on two cores (most of it ExecuTorch's portable kernels); set RT700_TEST_BUILD_DIR
to keep the build folder between runs.

What it checks comes from tools other than the harness: binutils' readelf and nm for sections and
symbols, objcopy + hashlib for the compiled-in model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK_DIR = os.environ.get("RT700_SDK_DIR", "")

pytestmark = pytest.mark.skipif(
    not SDK_DIR or not Path(SDK_DIR, "workspace.env").is_file(),
    reason=(
        "RT700_SDK_DIR does not name a workspace made by `hil sources` (no workspace.env there): the RT700 "
        "firmware build needs the pinned ExecuTorch and MCUXpresso sources, which a machine without a mirror "
        "of them (HIL_GIT_BASE) or network access cannot assemble"
    ),
)

BUILD_TIMEOUT_S = 1800


def _run(cmd: list[str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kw)


@pytest.fixture(scope="module")
def built_image(tmp_path_factory) -> tuple[Path, Path]:
    """(ELF, model.pte): a CPU-only cifar10 program exported and linked into the RT700 image by one command."""
    work = tmp_path_factory.mktemp("rt700")
    out = Path(os.environ.get("RT700_TEST_BUILD_DIR") or work / "cifar10")
    done = _run([sys.executable, "-m", "hil.cli.main", "rt700-image", "--model", "cifar10", "--delegate", "none",
                 "--out", str(out)], timeout=BUILD_TIMEOUT_S, cwd=work)
    assert done.returncode == 0, f"hil rt700-image failed (its message names the build log):\n{done.stderr[-3000:]}"
    elf = out / "hil_rt700.elf"
    assert elf.is_file() and str(elf) in done.stdout.splitlines()
    return elf, out / "model.pte"


def _sections(elf: Path) -> dict[str, tuple[int, int, str]]:
    """name -> (address, size, type) from binutils' readelf."""
    out = _run(["arm-none-eabi-readelf", "-SW", str(elf)]).stdout
    found: dict[str, tuple[int, int, str]] = {}
    for m in re.finditer(r"\]\s+(\S+)\s+(\S+)\s+([0-9a-f]{8})\s+[0-9a-f]+\s+([0-9a-f]+)", out):
        found[m.group(1)] = (int(m.group(3), 16), int(m.group(4), 16), m.group(2))
    return found


def test_image_has_the_boot_header_vectors_and_model_where_the_board_expects_them(built_image) -> None:
    elf, _ = built_image
    sections = _sections(elf)
    # XSPI boot header at the start of flash (NXP's flash_config.c, section .flash_conf), vectors at +16 KiB.
    assert sections[".flash_config"][0] == 0x28000000 and sections[".flash_config"][2] == "PROGBITS"
    assert sections[".flash_config"][1] >= 0x200
    assert sections[".interrupts"][0] == 0x28004000
    assert sections[".modeldata"][0] == 0x20430000


def test_compiled_in_model_is_the_exported_program(built_image, tmp_path) -> None:
    elf, pte = built_image
    out = tmp_path / "modeldata.bin"
    done = _run(["arm-none-eabi-objcopy", "-O", "binary", "--only-section=.modeldata", str(elf), str(out)])
    assert done.returncode == 0, done.stderr
    carried = out.read_bytes()
    model = pte.read_bytes()
    assert hashlib.sha256(carried[: len(model)]).hexdigest() == hashlib.sha256(model).hexdigest()


def test_npu_runtime_and_handshakes_are_linked_in(built_image) -> None:
    elf, _ = built_image
    symbols = set(_run(["arm-none-eabi-nm", "--defined-only", "-C", str(elf)]).stdout.split())
    for name in ("neutronInit", "neutronRunBlocking", "hil_etdump_ready", "hil_config_ready",
                 "hil_run_config", "hil_etdump_result", "hil_io", "Reset_Handler", "BOARD_BootClockHSRUN",
                 "POWER_ApplyPD", "et_pal_current_ticks"):
        assert name in symbols, name


def test_hil_check_image_passes_on_the_build(built_image) -> None:
    elf, pte = built_image
    done = _run([sys.executable, "-m", "hil.cli.main", "check-image", str(elf), "--model", str(pte), "--board",
                 "rt700", "--json"], cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)
    checks = results["checks"] if isinstance(results, dict) else results
    failed = [r for r in checks if r["status"] == "FAIL"]
    assert not failed
    # The outputs can be read back from the bench's image: the tensor handshake is there, whole.
    assert {r["check"]: r["status"] for r in checks}["tensor-io"] == "PASS"
