"""Project defaults for the pytest plugin: ini keys and environment variables beside the command line.

A setting a project keeps for every run (the board, the artifacts folder, iterations, warm-up,
timeout, baseline, history, tolerance, the QEMU firmware, whether inputs holding NaN or infinity run,
whether a session keeps QEMU between tests of one image, whether every run flashes)
can live where pytest users look for it:

    [tool.pytest.ini_options]          # or pytest.ini / tox.ini / setup.cfg
    hil_board = "rt700"
    hil_iterations = "20"

or in the environment (`HIL_BOARD=qemu pytest`, like labgrid's `LG_ENV`). One rule decides:
command line > environment > ini file > board file > built-in default. The options are registered
with no default, so "not given" is told apart from "given the default"; `resolve` then writes the
winner back into `config.option`, and every `getoption` sees it. The board file's word is the last
before the built-in default: a timeout nobody set is the board file's `[debug].timeout_s`
(hil.run.pipeline), so its default here is None. A relative path from the ini file is relative to
the ini file's folder (as pytest's own path settings are); from the environment or the command
line, to the current folder. A setting that is a board-file override (`hil_firmware`: the board
file's `[qemu].firmware`) is written over the board file, which remembers where the value came from
(`origins`), so the manifest can say it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hil.base.defaults import DEFAULT_ITERATIONS
from hil.config.options import OVERRIDES, firmware_choice
from hil.regress.compare import DEFAULT_TOLERANCE, parse_tolerance


DEFAULT_ARTIFACTS = Path("hil-artifacts")
SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def switch(text: str) -> bool:
    """A yes/no setting as the environment or an ini file spells it; any other word is refused, never taken for no."""
    value = SWITCH_WORDS.get(text.strip().lower())
    if value is None:
        raise ValueError(f"say one of {', '.join(SWITCH_WORDS)}")
    return value


@dataclass(frozen=True)
class Setting:
    """One `--hil-*` option that may also come from `env` or the ini key `ini`."""

    dest: str
    ini: str
    env: str
    type: Callable[[str], Any]
    default: Any
    help: str

    def parse(self, text: str, where: str) -> Any:
        try:
            return self.type(text)
        except (TypeError, ValueError) as exc:
            raise pytest.UsageError(f"{where}: {text!r} is not a valid value for {self.ini} ({exc})") from None


SETTINGS: tuple[Setting, ...] = (
    Setting("board", "hil_board", "HIL_BOARD", str, "qemu", "board to profile on (boards/NAME.toml)"),
    Setting("board_config", "hil_board_config", "HIL_BOARD_CONFIG", Path, None, "board file; wins over the board name"),
    Setting("hil_artifacts", "hil_artifacts", "HIL_ARTIFACTS", Path, DEFAULT_ARTIFACTS, "root folder for run artifacts"),
    Setting("hil_iterations", "hil_iterations", "HIL_ITERATIONS", int, DEFAULT_ITERATIONS, "inferences profiled per run"),
    Setting("hil_warmup", "hil_warmup", "HIL_WARMUP", int, 0, "iterations dropped before statistics (warm-up)"),
    Setting("hil_timeout", "hil_timeout", "HIL_TIMEOUT", float, None,
            "seconds allowed per board run (default: the board file's [debug].timeout_s)"),
    Setting("hil_baseline", "hil_baseline", "HIL_BASELINE", Path, None, "baseline folder (<model>.json each) or file"),
    Setting("hil_history", "hil_history", "HIL_HISTORY", Path, None, "SQLite database every run is appended to"),
    Setting("hil_tolerance", "hil_tolerance", "HIL_TOLERANCE", parse_tolerance, DEFAULT_TOLERANCE,
            "relative slowdown allowed (default 5%)"),
    Setting("hil_firmware", "hil_firmware", "HIL_FIRMWARE", firmware_choice, None,
            "QEMU firmware: runtime, replay or auto (default: the board file's [qemu].firmware)"),
    Setting("hil_allow_nonfinite_inputs", "hil_allow_nonfinite_inputs", "HIL_ALLOW_NONFINITE_INPUTS", switch, False,
            "run inputs that hold NaN or infinity (refused by default; 1/true/yes/on or 0/false/no/off)"),
    Setting("hil_keep_qemu", "hil_keep_qemu", "HIL_KEEP_QEMU", switch, True,
            "keep one QEMU per board between tests of one image and reset its core (on by default; "
            "1/true/yes/on or 0/false/no/off)"),
    Setting("hil_quantize", "hil_quantize", "HIL_QUANTIZE", switch, False,
            "quantize every hil_profile model to int8 with its delegate's quantizer (1/true/yes/on or 0/false/no/off)"),
    Setting("hil_force_flash", "hil_force_flash", "HIL_FORCE_FLASH", switch, False,
            "write the image on every run, even to a board that holds it already, and start a new QEMU each run "
            "(1/true/yes/on or 0/false/no/off)"),
)
BY_DEST = {s.dest: s for s in SETTINGS}
# Where each setting's value came from (hil.plugin.settings.origins), kept from `resolve`.
ORIGINS = pytest.StashKey[dict[str, str]]()


def add_ini(parser: pytest.Parser) -> None:
    for setting in SETTINGS:
        parser.addini(setting.ini, f"{setting.help} (command line and ${setting.env} win over it)")


def option_help(dest: str, text: str) -> str:
    """An option's help naming where else its value may come from."""
    setting = BY_DEST[dest]
    return f"{text} [env {setting.env}, ini {setting.ini}]"


def resolve(config: pytest.Config) -> None:
    """Write the winning value of every setting into `config.option` (the module docstring's rule).

    The board and the board file are one choice: a board name given on a higher level (the command line
    over the environment over the ini file) beats a board file given only on a lower one."""
    levels = {}
    for setting in SETTINGS:
        value, levels[setting.dest] = value_and_level(setting, config)
        setattr(config.option, setting.dest, value)
    config.stash[ORIGINS] = {s.dest: _where(s, levels[s.dest], config) for s in SETTINGS if levels[s.dest] < LEVELS}
    if config.option.board_config is not None and levels["board"] < levels["board_config"]:
        config.option.board_config = None


# Where a value came from, highest first; the default is the lowest.
CLI, ENV, INI, LEVELS = 0, 1, 2, 3


def _where(setting: Setting, level: int, config: pytest.Config) -> str:
    flag = next((o.flag for o in OVERRIDES if o.dest == setting.dest), f"--{setting.dest.replace('_', '-')}")
    return {CLI: f"command line {flag}", ENV: f"environment {setting.env}",
            INI: f"{config.inipath or 'ini file'} [{setting.ini}]"}[level]


def override_origins(config: pytest.Config) -> dict[str, str]:
    """`section.key` -> where its value came from, for the board-file overrides among the settings; those
    given only on the command line (no setting of their own) are left to the default, "command line"."""
    found = config.stash.get(ORIGINS, {})
    return {o.key: found[o.dest] for o in OVERRIDES if o.dest in found}


def value_of(setting: Setting, config: pytest.Config) -> Any:
    return value_and_level(setting, config)[0]


def value_and_level(setting: Setting, config: pytest.Config) -> tuple[Any, int]:
    given = getattr(config.option, setting.dest, None)
    if given is not None:
        return given, CLI
    text = os.environ.get(setting.env, "")
    if text.strip():
        return setting.parse(text.strip(), f"environment variable {setting.env}"), ENV
    ini = config.getini(setting.ini)
    if ini not in (None, "", []):
        value = setting.parse(str(ini).strip(), f"{config.inipath or 'ini file'} [{setting.ini}]")
        if isinstance(value, Path) and not value.is_absolute() and config.inipath is not None:
            value = config.inipath.parent / value
        return value, INI
    return setting.default, LEVELS
