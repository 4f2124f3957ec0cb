"""The run count one ETDump holds, on the host (hil.config.etdump_bound), against the firmware's own figures:
the constants are read from firmware/app/hil_config.h and firmware/cmake/hil_app.cmake, the instruction count
from the program ExecuTorch's exporter emitted, and the transport chosen by the board file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from hil.base.errors import InputError
from hil.config import etdump_bound as bound
from hil.config.board_config import load_board_config
from hil.run.request import RunRequest, check_request

FIRMWARE = Path(__file__).resolve().parents[2] / "firmware"


def _define(text: str, name: str) -> int:
    return int(re.search(rf"#define {name} \(?(\d+)U", text).group(1))


def test_the_constants_are_the_firmwares() -> None:
    config = (FIRMWARE / "app" / "hil_config.h").read_text()
    assert (bound.EVENT_BYTES, bound.RUN_BYTES, bound.FIXED_BYTES) == (
        _define(config, "HIL_ETDUMP_EVENT_BYTES"), _define(config, "HIL_ETDUMP_RUN_BYTES"),
        _define(config, "HIL_ETDUMP_FIXED_BYTES"))
    per_instruction = [int(n) for n in re.findall(r"#define HIL_ETDUMP_EVENTS_PER_INSTRUCTION (\d+)U", config)]
    assert per_instruction == [bound.EVENTS_PER_INSTRUCTION_DEBUG, bound.EVENTS_PER_INSTRUCTION]  # debug first
    cmake = (FIRMWARE / "cmake" / "hil_app.cmake").read_text()
    assert int(re.search(r"set\(HIL_ETDUMP_BUFFER_SIZE (0x[0-9a-fA-F]+)", cmake).group(1), 16) == bound.DEFAULT_BUFFER_BYTES
    assert int(re.search(r"set\(HIL_MAX_RUNS (\d+)", cmake).group(1)) == bound.FIRMWARE_MAX_RUNS


def test_the_bound_is_hil_max_traced_runs() -> None:
    # 5 instructions (the small CNN): 2 * 5 + 1 events of 160 B and 256 B a run after 16 KiB: 251 runs in 512 KiB,
    # the figure the QEMU runtime image prints for it (`HIL etdump stream: at most 251 runs per dump`).
    assert bound.max_traced_runs(5, 512 * 1024) == (512 * 1024 - 16384) // (256 + 11 * 160) == 251
    assert bound.max_traced_runs(5, 512 * 1024, debug=True) == (512 * 1024 - 16384) // (256 + 21 * 160)
    assert bound.max_traced_runs(0, 512 * 1024) == 1000  # HIL_MAX_RUNS caps it
    assert bound.max_traced_runs(5, 16384) == 0


@pytest.fixture(scope="module")
def pte(tmp_path_factory) -> tuple[Path, int]:
    """A two-operator program, and its instruction count as the exporter emitted it."""
    from executorch.exir import to_edge

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    program = to_edge(torch.export.export(model, (torch.randn(1, 4),))).to_executorch()
    path = tmp_path_factory.mktemp("bound") / "model.pte"
    path.write_bytes(program.buffer)
    chains = program.executorch_program.execution_plan[0].chains
    return path, sum(len(chain.instructions) for chain in chains)


def _board(transport: str | None, buffer: int = 64 * 1024):
    settings = {"memory.etdump_buffer_bytes": buffer, **({bound.TRANSPORT_KEY: transport} if transport else {})}
    return load_board_config("qemu").with_overrides(settings)


def test_a_count_over_the_bound_is_refused_with_gdb_and_streamed_with_console_or_auto(pte) -> None:
    path, instructions = pte
    fits = bound.max_traced_runs(instructions, 64 * 1024)
    assert bound.program_instructions(path) == instructions and 0 < fits < 1000
    assert bound.check_traced_runs(_board("gdb"), path, fits)["stream"] is False
    with pytest.raises(InputError, match=rf"{fits + 1} runs .* at most {fits} runs in the 65536 B ETDump buffer "
                                         r"\(memory.etdump_buffer_bytes.*refused before any image was built"):
        bound.check_traced_runs(_board("gdb"), path, fits + 1)
    assert bound.check_traced_runs(_board("console"), path, 1)["stream"] is True
    assert bound.check_traced_runs(_board("auto"), path, fits)["stream"] is False
    assert bound.check_traced_runs(_board("auto"), path, fits + 1)["stream"] is True
    with pytest.raises(InputError, match=r"the debug outputs need one dump"):
        bound.check_traced_runs(_board("auto", 20 * 1024), path, 1000, debug=True)


def test_a_board_file_without_the_key_reads_the_etdump_through_the_debugger(tmp_path: Path) -> None:
    (tmp_path / "bare.toml").write_text('[board]\nname = "bare"\nkind = "rt700"\n')
    assert bound.transport(load_board_config(path=tmp_path / "bare.toml")) == "gdb"


def test_the_console_transport_with_debug_outputs_is_refused_with_the_request(tmp_path: Path) -> None:
    board = _board("console")
    with pytest.raises(InputError, match=r"debug outputs \(--hil-debug-outputs\) need the gdb transport"):
        check_request(RunRequest("cifar10", board, tmp_path, debug_outputs=True))
    assert check_request(RunRequest("cifar10", board, tmp_path)).plan.stream is True
    assert check_request(RunRequest("cifar10", _board("auto"), tmp_path)).plan.stream is False  # decided later


def test_a_buffer_too_small_for_one_run_says_so_with_its_size_and_what_one_run_needs(pte) -> None:
    path, instructions = pte
    # 16 KiB once per dump, then 256 B a run and 160 B for each of its 2 * instructions + 1 events (hil_config.h).
    one = 16384 + 256 + (2 * instructions + 1) * 160
    board = _board("gdb", one - 1)
    with pytest.raises(InputError) as info:
        bound.check_traced_runs(board, path, 1)
    assert str(info.value) == (
        f"the {one - 1} B ETDump buffer of board 'qemu' (memory.etdump_buffer_bytes, the firmware's "
        f"HIL_ETDUMP_BUFFER_SIZE) cannot hold even one run of {path}: one run of its {instructions} instructions "
        f"needs {one} B (16384 B once per dump and {one - 16384} B per run); give memory.etdump_buffer_bytes at "
        f"least {one} B; refused before any image was built")
    assert bound.check_traced_runs(_board("gdb", one), path, 1)["max_traced_runs"] == 1
