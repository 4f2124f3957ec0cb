"""The pytest plugin: wires the settings (command line, environment, ini file: hil.plugin.settings) to fixtures.

`pytest --board qemu` (or `--board rt700` on a bench) and a test gets a profiled run in one line:

    def test_cifar10(hil_profile):
        run = hil_profile("cifar10")
        assert run.profile["totals_us"]["method_execute"] > 0

Fixtures: `hil_profile` (profile a model), `hil_board` (the connected board, for your own firmware),
`hil_board_config` (the board file), `hil_artifacts_dir` (this test's folder); the regression side
adds `hil_budget` and the `hil_budget` marker (hil.plugin.regress_hooks). `@pytest.mark.hil_requires(...)`
skips a test on a board without a feature (hil.config.capabilities); the board fixtures parametrize indirectly
(hil.plugin.boards); what reaches the terminal is hil.plugin.output's business.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hil.config import capabilities
from hil.plugin import boards as plugin_boards
from hil.config.board_config import BoardConfig
from hil.base.defaults import DEFAULT_ITERATIONS
from hil.base.errors import HilError, InputError
from hil.plugin.short_errors import pytest_runtest_makereport  # noqa: F401  (a hook of this plugin)
from hil.plugin import exit_status
from hil.plugin.rootdir import pytest_load_initial_conftests  # noqa: F401  (a hook of this plugin)
from hil.plugin.et_hil_items import MARKERS, uses_et_hil  # noqa: F401  (MARKERS, uses_et_hil: hil.plugin.regress_hooks)
from hil.plugin.neighbour_warnings import pytest_collection_modifyitems  # noqa: F401  (a hook of this plugin)
from hil.config.options import OVERRIDES
from hil.base.progress import Lines
from hil.plugin.option_checks import check_session_options
from hil.plugin.run_names import RunNames, run_label
from hil.plugin.settings import BY_DEST, DEFAULT_ARTIFACTS, add_ini, option_help
from hil.plugin.settings import resolve as resolve_settings

if TYPE_CHECKING:  # imported when the fixture is used: it pulls in the board classes
    from hil.run.board_session import BoardSession
    from hil.firmware.qemu_firmware import Requirement

# The run folders a test made, read by the regression hooks (hil.plugin.regress_hooks).
RUN_FOLDERS = pytest.StashKey[list[Path]]()
# Per test: run folder -> how to re-run it (`rerun(n)` -> the n-th confirmation run's folder), for --hil-confirm.
RERUNS = pytest.StashKey[dict[str, Callable[[int], Path]]]()
# The folder, under the artifacts root, of the kept QEMUs' own logs (one folder per session: _hil_qemu_keeper).
KEPT_QEMU_FOLDER = "kept-qemu"
# The markers et-hil registers; a test carrying one, or using a `hil_*` fixture, is an et-hil test.
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil", "et-hil hardware-in-the-loop profiling")
    # `--board` is the product's own word (`pytest --board rt700`); every other option carries the
    # `--hil-` prefix so the plugin can share a session with pytest-embedded, labgrid and the like.
    # No defaults here: a value not given comes from the environment, the ini file or the board file (hil.plugin.settings).
    group.addoption("--board", metavar="NAME", help=option_help("board", "board to profile on (boards/NAME.toml); default qemu"))
    group.addoption("--hil-board-config", dest="board_config", type=Path, metavar="FILE",
                    help=option_help("board_config", "board file; wins over --board"))
    group.addoption("--hil-artifacts", type=Path, metavar="DIR",
                    help=option_help("hil_artifacts", f"root folder for run artifacts (default {DEFAULT_ARTIFACTS})"))
    group.addoption("--hil-iterations", type=int, metavar="N", help=option_help("hil_iterations", f"inferences profiled per run (default {DEFAULT_ITERATIONS})"))
    group.addoption("--hil-timeout", type=float, metavar="S",
                    help=option_help("hil_timeout", "seconds allowed per board run (default: the board file's)"))
    group.addoption("--hil-debug-outputs", action="store_true", default=False,
                    help="record every operator's outputs on the target and name the first that drifts (hil.drift)")
    group.addoption("--hil-drift-snr-db", type=float, default=None, metavar="DB",
                    help="with --hil-debug-outputs: an operator below this SNR drifts (default 40)")
    group.addoption("--hil-inputs", dest="hil_inputs", type=Path, default=None, metavar="FILE",
                    help="input tensors (.pt/.npz) for every hil_profile run instead of the model's example inputs")
    group.addoption("--hil-quantize", dest="hil_quantize", action="store_true", default=None,
                    help=option_help("hil_quantize", "quantize to int8 with the delegate's quantizer (hil.aot.quantize)"))
    group.addoption("--hil-calibration", dest="hil_calibration", type=Path, default=None, metavar="FILE",
                    help="with --hil-quantize: calibration samples (.pt/.npz) instead of the example inputs")
    group.addoption("--hil-allow-nonfinite-inputs", dest="hil_allow_nonfinite_inputs", action="store_true",
                    default=None, help=option_help("hil_allow_nonfinite_inputs",
                                                   "run inputs that hold NaN or infinity (refused by default)"))
    # On by default; the pair of flags lets the command line beat an environment or ini file that says otherwise.
    group.addoption("--hil-keep-qemu", dest="hil_keep_qemu", action="store_true", default=None,
                    help=option_help("hil_keep_qemu", "keep one QEMU per board for the image it last ran and reset "
                                     "its core for the next test of that image (the default)"))
    group.addoption("--hil-no-keep-qemu", dest="hil_keep_qemu", action="store_false", default=None,
                    help="start a new QEMU for every run (HIL_KEEP_QEMU=0, ini hil_keep_qemu = false)")
    group.addoption("--hil-force-flash", dest="hil_force_flash", action="store_true", default=None,
                    help=option_help("hil_force_flash", "flash every run, even a board that holds the image already "
                                     "(read back through the probe), and start a new QEMU each run"))
    add_ini(parser)
    for opt in OVERRIDES:  # those that are settings too (--hil-firmware) also come from the environment and ini
        group.addoption(opt.flag, dest=opt.dest, type=opt.type, default=None, metavar=opt.metavar,
                        help=option_help(opt.dest, opt.help) if opt.dest in BY_DEST else opt.help)
    from hil.lab.session import LAB_OPTIONS

    for flag, dest, kind, metavar, text in LAB_OPTIONS:
        group.addoption(flag, dest=dest, type=kind, default=None, metavar=metavar, help=text)


@pytest.hookimpl(tryfirst=True)  # the settings are resolved before any other plugin reads an option
def pytest_configure(config: pytest.Config) -> None:
    from hil.plugin import output as plugin_output
    from hil.target.process import stop_children_on_sigterm

    resolve_settings(config)
    check_session_options(config)
    config.addinivalue_line("markers", "device: profiles a model on the board chosen with --board")
    config.addinivalue_line("markers", capabilities.MARKER_HELP)
    plugin_output.configure(config)
    config.pluginmanager.register(exit_status, "hil-environment-fault-mark")
    config.pluginmanager.register(exit_status.EnvironmentExit(), "hil-environment-exit")
    stop_children_on_sigterm()


def pytest_sessionstart(session: pytest.Session) -> None:
    from hil.plugin import output as plugin_output

    plugin_output.draw_on_terminal(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    from hil.plugin import output as plugin_output

    plugin_output.unconfigure(config)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.hil_requires(...)`: skip, with the reason, on a board that lacks a feature (hil.config.capabilities)."""
    if item.get_closest_marker(capabilities.MARKER) is None:
        return
    needed = capabilities.required(item)
    board = plugin_boards.load(item.config, plugin_boards.own_board(item))
    replays = None
    if board.kind == "qemu":
        from hil.firmware.qemu_firmware import replay_reason

        replays = replay_reason(board)
    reason = capabilities.missing(board, needed, replay_reason=replays)
    if reason:
        skip_at_test(reason)


def skip_at_test(reason: str) -> None:
    """Skip the running test, reported at the test's own line (`-rs`: `test_x.py:12: reason`), not at this
    hook's: the location pytest gives its own skip marks (_pytest/skipping.py raises `skip.Exception` with
    `_use_item_location=True`; _pytest/reports.py then reports `item.reportinfo()`)."""
    try:
        exc = pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:  # a pytest without the keyword: the skip still happens, at this line
        exc = pytest.skip.Exception(reason)
    raise exc


@pytest.fixture(scope="session")
def _hil_board_pool(pytestconfig: pytest.Config) -> Iterator[plugin_boards.BoardPool]:
    pool = plugin_boards.BoardPool(pytestconfig)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def _hil_qemu_keeper(pytestconfig: pytest.Config, _hil_board_pool: plugin_boards.BoardPool) -> Iterator[Any]:
    """The QEMU processes kept between runs of one image (hil.boards.qemu_keep), ended with the session; None
    when keeping is off (`--hil-no-keep-qemu`).

    Their logs go to a folder of the session's own under the artifacts root (`kept-qemu/<time>-<pid>`: two
    sessions, or xdist workers, sharing a root never meet), made when a QEMU first starts; never into a run
    folder, which must not change after its run. It takes the board pool so it is torn down first: a kept
    QEMU ends before the session's board (a lab place serving its console) is given back."""
    if not pytestconfig.getoption("hil_keep_qemu"):
        yield None
        return
    import os
    import time

    from hil.boards.qemu_keep import QemuKeeper

    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    root = Path(pytestconfig.getoption("hil_artifacts")).absolute()  # the manifests name these logs: from anywhere
    keeper = QemuKeeper(root / KEPT_QEMU_FOLDER / f"{stamp}-{os.getpid()}", session=True)
    try:
        yield keeper
    finally:
        keeper.close()


@pytest.fixture(scope="session")
def hil_board_config(request: pytest.FixtureRequest, _hil_board_pool: plugin_boards.BoardPool) -> BoardConfig:
    """The board file chosen by the settings (`--board`, `--hil-board-config`, HIL_BOARD, `hil_board`), with its
    overrides applied; in a shared lab, this session's own board (a lab-file entry, a labgrid place), held until
    the session ends (hil.lab.session). Parametrized indirectly, the board the parameter names (hil.plugin.boards)."""
    return _hil_board_pool.get(getattr(request, "param", plugin_boards.DEFAULT))


def _board_for(request: pytest.FixtureRequest, hil_board_config: BoardConfig) -> BoardConfig:
    """This test's board: the one it parametrized `hil_board` with, else `hil_board_config` (itself parametrized
    or the session's). Both fixtures take `hil_board_config`, so either may be parametrized indirectly."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if "hil_board" in params:
        return request.getfixturevalue("_hil_board_pool").get(params["hil_board"])
    return hil_board_config


def _history_requirement(config: pytest.Config, model: str, board: BoardConfig,
                         delegate: str | None) -> Requirement | None:
    """The runtime image, required when the board leaves the choice to `auto` and the history's series of
    this program is a runtime series (hil.regress.series_image); None otherwise. A spec that names no
    model gives None: the run itself then says what is wrong with it."""
    if board.kind != "qemu" or board.get("qemu.firmware", "auto") != "auto":
        return None
    from hil.aot.models import resolve_spec
    from hil.regress.series_image import required_by_history

    try:
        name = resolve_spec(model).name
    except HilError:
        return None
    return required_by_history(config.getoption("hil_history", None), name,
                               delegate or board.get("aot.delegate", "none"), board.name)


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
def hil_board(request: pytest.FixtureRequest, hil_board_config: BoardConfig,
              hil_artifacts_dir: Path) -> Iterator[BoardSession]:
    """The connected board, for a test that brings its own firmware: `flash(elf)`, `console.expect(pattern,
    timeout)`, `configure(iterations, warmup)`, `run_to(breakpoint)`, `read_etdump(result_expr)`,
    `profile(etrecord)` (hil.run.board_session). Its files land in the test's artifacts folder, under board/;
    everything it started is stopped when the test ends. Parametrized indirectly, the board the parameter names."""
    from hil.run.board_session import BoardSession

    session = BoardSession(_board_for(request, hil_board_config), hil_artifacts_dir / "board")
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def hil_profile(
    request: pytest.FixtureRequest, hil_board_config: BoardConfig, hil_artifacts_dir: Path, _hil_qemu_keeper: Any
) -> Callable[..., Any]:
    """Factory: `hil_profile(model, **options)` profiles `model` on the chosen board and returns a RunResult."""
    from hil.aot.models import rooted_spec
    from hil.run.pipeline import RunRequest, run_profile

    config = request.config
    names = RunNames()

    def profile(model: str, *, subdir: str | None = None, **options: Any) -> Any:
        # Paths written in a test are the project's, as pytest's own are: from the rootdir, not the current folder.
        model = rooted_spec(model, config.rootpath)
        if options.get("inputs_file") is not None:
            options["inputs_file"] = config.rootpath / Path(options["inputs_file"]).expanduser()
        options.setdefault("iterations", config.getoption("hil_iterations"))
        options.setdefault("timeout_s", config.getoption("hil_timeout"))
        options.setdefault("warmup", config.getoption("hil_warmup"))
        options.setdefault("debug_outputs", bool(config.getoption("hil_debug_outputs")))
        options.setdefault("drift_snr_db", config.getoption("hil_drift_snr_db"))
        options.setdefault("inputs_file", config.getoption("hil_inputs"))
        options.setdefault("allow_nonfinite_inputs", bool(config.getoption("hil_allow_nonfinite_inputs")))
        options.setdefault("force_flash", bool(config.getoption("hil_force_flash")))
        options.setdefault("quantize", bool(config.getoption("hil_quantize")))
        if options.get("calibration_file") is not None:
            options["calibration_file"] = config.rootpath / Path(options["calibration_file"]).expanduser()
        options.setdefault("calibration_file", config.getoption("hil_calibration"))
        # The session's keeper (None: --hil-no-keep-qemu); the rerun below takes it too.
        options.setdefault("qemu_keeper", _hil_qemu_keeper)
        board = options.pop("board", None) or _board_for(request, hil_board_config)
        if "required_firmware" not in options:
            options["required_firmware"] = _history_requirement(config, model, board, options.get("delegate"))
        if subdir is not None:
            out = artifacts_subfolder(hil_artifacts_dir, subdir)
        else:  # one folder per run (hil.plugin.run_names), so two runs of a test never overwrite each other
            label = run_label(model, options.get("delegate") or board.get("aot.delegate", "none"))
            out = hil_artifacts_dir / names.take(_folder_name(label))

        def rerun(index: int) -> Path:
            again = out.with_name(f"{out.name}-confirm{index}")
            return run_profile(RunRequest(model=model, board=board, out_dir=again, **options)).out_dir

        request.node.stash.setdefault(RERUNS, {})[str(out.resolve())] = rerun
        try:
            return run_profile(RunRequest(model=model, board=board, out_dir=out, **options), progress=Lines())
        finally:  # failed runs are reported (history, JUnit) too
            request.node.stash.setdefault(RUN_FOLDERS, []).append(out)

    return profile
