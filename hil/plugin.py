"""The pytest plugin: wires command-line options to fixtures, nothing more.

`pytest --board qemu` (or `--board rt700` on a bench) and a test gets a profiled run in one line:

    def test_cifar10(hil_profile):
        run = hil_profile("cifar10")
        assert run.profile["totals_us"]["method_execute"] > 0
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hil.config import BoardConfig, load_board_config
from hil.options import OVERRIDES, overrides_from

DEFAULT_ARTIFACTS = Path("hil-artifacts")
# Per test: run folder -> how to re-run it (`rerun(n)` -> the n-th confirmation run's folder), for --hil-confirm.
RERUNS = pytest.StashKey[dict[str, Callable[[int], Path]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil", "et-hil hardware-in-the-loop profiling")
    group.addoption("--board", default="qemu", help="board to profile on (boards/NAME.toml); default qemu")
    group.addoption("--board-config", type=Path, default=None, help="board file; wins over --board")
    group.addoption("--hil-artifacts", type=Path, default=DEFAULT_ARTIFACTS, help="root folder for run artifacts")
    group.addoption("--hil-iterations", type=int, default=5, help="inferences profiled per run")
    group.addoption("--hil-timeout", type=float, default=None, help="seconds allowed per board run")
    for opt in OVERRIDES:
        group.addoption(opt.flag, dest=opt.dest, type=opt.type, default=None, help=opt.help)


def pytest_configure(config: pytest.Config) -> None:
    from hil.road.process import stop_children_on_sigterm

    config.addinivalue_line("markers", "device: profiles a model on the board chosen with --board")
    stop_children_on_sigterm()


@pytest.fixture(scope="session")
def hil_board(pytestconfig: pytest.Config) -> BoardConfig:
    """The board chosen on the command line, with its overrides applied."""
    cfg = load_board_config(pytestconfig.getoption("board"), pytestconfig.getoption("board_config"))
    return cfg.with_overrides(overrides_from(vars(pytestconfig.option)))


def _folder_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


@pytest.fixture
def hil_artifacts_dir(request: pytest.FixtureRequest) -> Path:
    """This test's own artifacts folder, kept after the run whatever the outcome."""
    root = Path(request.config.getoption("hil_artifacts"))
    folder = root / _folder_name(request.node.nodeid)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def hil_profile(
    request: pytest.FixtureRequest, hil_board: BoardConfig, hil_artifacts_dir: Path
) -> Callable[..., Any]:
    """Factory: `hil_profile(model, **options)` profiles `model` on the chosen board and returns a RunResult."""
    from hil.pipeline import RunRequest, run_profile

    config = request.config

    def profile(model: str, *, subdir: str | None = None, **options: Any) -> Any:
        out = hil_artifacts_dir / (subdir or _folder_name(model.split(":")[-1] if ":" in model else model))
        options.setdefault("iterations", config.getoption("hil_iterations"))
        options.setdefault("timeout_s", config.getoption("hil_timeout"))
        options.setdefault("warmup", config.getoption("hil_warmup"))
        board = options.pop("board", hil_board)

        def rerun(index: int) -> Path:
            again = out.with_name(f"{out.name}-confirm{index}")
            return run_profile(RunRequest(model=model, board=board, out_dir=again, **options)).out_dir

        request.node.stash.setdefault(RERUNS, {})[str(out.resolve())] = rerun
        try:
            return run_profile(RunRequest(model=model, board=board, out_dir=out, **options))
        finally:  # failed runs are reported (history, JUnit) too
            request.node.user_properties.append(("hil_artifacts", str(out)))

    return profile
