"""The pytest plugin: wires command-line options to fixtures, nothing more.

`pytest --board qemu` (or `--board rt700` on a bench) and a test gets a profiled run in one line:

    def test_cifar10(hil_profile):
        run = hil_profile("cifar10")
        assert run.profile["totals_us"]["method_execute"] > 0

Fixtures: `hil_profile` (profile a model), `hil_board` (the connected board, for your own firmware),
`hil_board_config` (the board file), `hil_artifacts_dir` (this test's folder); the regression side
adds `hil_budget` and the `hil_budget` marker (hil.regress.pytest_regress).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hil.config import BoardConfig, load_board_config
from hil.errors import InputError
from hil.options import OVERRIDES, overrides_from
from hil.progress import Lines, Progress
from hil.run_names import RunNames, run_label

if TYPE_CHECKING:  # imported when the fixture is used: it pulls in the board classes
    from hil.board_session import BoardSession

DEFAULT_ARTIFACTS = Path("hil-artifacts")
# The run folders a test made, read by the regression hooks (hil.regress.pytest_regress).
RUN_FOLDERS = pytest.StashKey[list[Path]]()
# Per test: run folder -> how to re-run it (`rerun(n)` -> the n-th confirmation run's folder), for --hil-confirm.
RERUNS = pytest.StashKey[dict[str, Callable[[int], Path]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil", "et-hil hardware-in-the-loop profiling")
    # `--board` is the product's own word (`pytest --board rt700`); every other option carries the
    # `--hil-` prefix so the plugin can share a session with pytest-embedded, labgrid and the like.
    group.addoption("--board", default="qemu", metavar="NAME", help="board to profile on (boards/NAME.toml); default qemu")
    group.addoption("--hil-board-config", dest="board_config", type=Path, default=None, metavar="FILE",
                    help="board file; wins over --board")
    group.addoption("--hil-artifacts", type=Path, default=DEFAULT_ARTIFACTS, metavar="DIR",
                    help="root folder for run artifacts")
    group.addoption("--hil-iterations", type=int, default=5, metavar="N", help="inferences profiled per run")
    group.addoption("--hil-timeout", type=float, default=None, metavar="S", help="seconds allowed per board run")
    for opt in OVERRIDES:
        group.addoption(opt.flag, dest=opt.dest, type=opt.type, default=None, metavar=opt.metavar, help=opt.help)
    from hil.lab.session import LAB_OPTIONS

    for flag, dest, kind, metavar, text in LAB_OPTIONS:
        group.addoption(flag, dest=dest, type=kind, default=None, metavar=metavar, help=text)


def pytest_configure(config: pytest.Config) -> None:
    from hil.road.process import stop_children_on_sigterm

    config.addinivalue_line("markers", "device: profiles a model on the board chosen with --board")
    stop_children_on_sigterm()


@pytest.fixture(scope="session")
def hil_board_config(pytestconfig: pytest.Config) -> Iterator[BoardConfig]:
    """The board file chosen on the command line (`--board`, `--hil-board-config`), with its overrides
    applied; in a shared lab, this session's own board (a lab-file entry, a labgrid place), held until
    the session ends (hil.lab.session)."""
    from hil.lab.session import LabOptions, held_board

    cfg = load_board_config(pytestconfig.getoption("board"), pytestconfig.getoption("board_config"),
                            project_dirs=[pytestconfig.rootpath])
    cfg = cfg.with_overrides(overrides_from(vars(pytestconfig.option)))
    worker = getattr(pytestconfig, "workerinput", {}).get("workerid")
    with held_board(cfg, LabOptions.from_values(vars(pytestconfig.option), worker)) as held:
        yield held


# Longest folder name made from a test id (file systems allow 255 bytes; leave room for the hash).
MAX_FOLDER_NAME = 120


def _folder_name(text: str) -> str:
    """A folder name for a test id or model name: readable, and unique for every distinct `text`.

    Characters outside [A-Za-z0-9_.-] become `_`, so `a/b` and `a b` would meet in one folder, and
    long ids cut at the same length would too: whenever the name is not `text` itself, a short hash
    of `text` is appended. The result never is `.` or `..` and holds no separator.
    """
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")
    if readable == text and len(text) <= MAX_FOLDER_NAME and text not in ("", ".", ".."):
        return text
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:10]
    return f"{readable[:MAX_FOLDER_NAME].strip('.')}-{digest}"


def artifacts_subfolder(folder: Path, subdir: str) -> Path:
    """`folder / subdir` for a test's own name of its run folder; InputError for one that would leave
    `folder` (an absolute path, a `..` part) or name nothing."""
    parts = Path(subdir).parts
    if not subdir or Path(subdir).is_absolute() or any(part in ("..", ".") for part in parts):
        raise InputError(f"hil_profile(subdir={subdir!r}): a relative folder inside {folder} without '..' is needed")
    out = folder / subdir
    if not out.resolve().is_relative_to(folder.resolve()):  # a symlink in the way
        raise InputError(f"hil_profile(subdir={subdir!r}) leads outside {folder} ({out.resolve()})")
    return out


@pytest.fixture
def hil_artifacts_dir(request: pytest.FixtureRequest) -> Path:
    """This test's own artifacts folder, kept after the run whatever the outcome; one per test id."""
    root = Path(request.config.getoption("hil_artifacts"))
    folder = root / _folder_name(request.node.nodeid)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def hil_board(hil_board_config: BoardConfig, hil_artifacts_dir: Path) -> Iterator[BoardSession]:
    """The connected board, for a test that brings its own firmware: `flash(elf)`, `console.expect(pattern,
    timeout)`, `configure(iterations, warmup)`, `run_to(breakpoint)`, `read_etdump(result_expr)`,
    `profile(etrecord)` (hil.board_session). Its files land in the test's artifacts folder, under board/;
    everything it started is stopped when the test ends."""
    from hil.board_session import BoardSession

    session = BoardSession(hil_board_config, hil_artifacts_dir / "board")
    try:
        yield session
    finally:
        session.close()


def _progress(config: pytest.Config) -> Progress | None:
    """With `-v`, each step of a run as it starts and ends, through pytest's terminal reporter."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 1:
        return None
    capture = config.pluginmanager.get_plugin("capturemanager")

    def write(line: str) -> None:
        # The test's output is being captured; like pytest's live logging, step lines go past it.
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.write_line(f"    {line}")

    return Lines(write, durations=True)


@pytest.fixture
def hil_profile(
    request: pytest.FixtureRequest, hil_board_config: BoardConfig, hil_artifacts_dir: Path
) -> Callable[..., Any]:
    """Factory: `hil_profile(model, **options)` profiles `model` on the chosen board and returns a RunResult."""
    from hil.pipeline import RunRequest, run_profile

    config = request.config
    names = RunNames()

    def profile(model: str, *, subdir: str | None = None, **options: Any) -> Any:
        options.setdefault("iterations", config.getoption("hil_iterations"))
        options.setdefault("timeout_s", config.getoption("hil_timeout"))
        options.setdefault("warmup", config.getoption("hil_warmup"))
        board = options.pop("board", hil_board_config)
        if subdir is not None:
            out = artifacts_subfolder(hil_artifacts_dir, subdir)
        else:  # one folder per run (hil.run_names), so two runs of a test never overwrite each other
            label = run_label(model, options.get("delegate") or board.get("aot.delegate", "none"))
            out = hil_artifacts_dir / names.take(_folder_name(label))

        def rerun(index: int) -> Path:
            again = out.with_name(f"{out.name}-confirm{index}")
            return run_profile(RunRequest(model=model, board=board, out_dir=again, **options)).out_dir

        request.node.stash.setdefault(RERUNS, {})[str(out.resolve())] = rerun
        try:
            return run_profile(RunRequest(model=model, board=board, out_dir=out, **options), progress=_progress(config))
        finally:  # failed runs are reported (history, JUnit) too
            request.node.stash.setdefault(RUN_FOLDERS, []).append(out)

    return profile
