"""The project's rootdir and ini file, found from the test paths alone, never from an et-hil option's value.

Why: pytest finds the rootdir and the ini file (`_pytest/config/findpaths.py`, `determine_setup`) before it
loads plugins from their entry points, so at that moment `--hil-history /tmp/nightly/history.db` is an option
it does not know yet, and its value reads as a test path. Once that file existed (the second night on), the
common ancestor of the "paths" was `/`: the rootdir moved there, the project's ini file was no longer found
(its `hil_*` keys ignored) and every path the project's tests name (`hil_profile("tests/models.py:factory")`,
resolved against the rootdir as pytest documents) pointed into the wrong folder. `--hil-history=/tmp/...`
(one word) never leaked; the usual two-word spelling did, as would any other path option's.

So once the options are known, the rootdir and the ini file are worked out again by pytest's own function,
from the arguments that really are test paths (the `file_or_dir` pytest parses now), and put in place of the
first guess before pytest reads the ini file for its conftests, `testpaths` or nodeids. Nothing changes when
both agree (no path option given, `--rootdir` given, or the value spelled with `=`). pytest keeps these on
private attributes (`_rootpath`, `_inipath`, the ini values): the fix is written against pytest 8.4 and 9.x.
An ini file that was missed entirely whose `addopts` pytest already failed to apply cannot be mended from
here: that case is refused, naming the option to spell with `=`.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest


def _setup_from(config: pytest.Config) -> tuple[Any, ...] | None:
    """pytest's `determine_setup` over the real test paths, or None where this pytest has no such function."""
    try:
        from _pytest.config.findpaths import determine_setup
    except ImportError:
        return None
    ns = config.known_args_namespace
    given = {"inifile": ns.inifilename, "override_ini": getattr(ns, "override_ini", None), "args": ns.file_or_dir,
             "rootdir_cmd_arg": ns.rootdir or None, "invocation_dir": config.invocation_params.dir}
    accepted = inspect.signature(determine_setup).parameters
    return tuple(determine_setup(**{k: v for k, v in given.items() if k in accepted}))


def _leaked_option(config: pytest.Config) -> str:
    """The option whose value pytest took for a test path (for the message), else a generic name."""
    args = list(config.invocation_params.args)
    known = {str(a) for a in config.known_args_namespace.file_or_dir}
    for flag, value in zip(args, args[1:]):
        if flag.startswith("--hil-") and "=" not in flag and value not in known:
            return f"{flag} {value}"
    return "an option's value"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Put the rootdir and ini file the test paths give in place of pytest's first guess (module docstring)."""
    found = _setup_from(early_config)
    if found is None:
        return
    rootpath, inipath, inicfg = found[0], found[1], found[2]
    if Path(rootpath) == early_config.rootpath and inipath == early_config.inipath:
        return
    if inipath is not None and inipath != early_config.inipath and "addopts" in inicfg:
        option = _leaked_option(early_config)
        raise pytest.UsageError(f"{option}: pytest took this value for a test path and missed the ini file "
                                f"{inipath} (its addopts); write the option with '=' ({option.replace(' ', '=', 1)})")
    old_cut = str(early_config.inipath.parent if early_config.inipath else early_config.rootpath)
    early_config._rootpath = Path(rootpath)
    early_config._inipath = inipath
    if hasattr(early_config, "_inicfg"):
        early_config._inicfg = inicfg
    else:  # pytest 8
        early_config.inicfg = inicfg
    if len(found) > 3 and hasattr(early_config, "_ignored_config_files"):
        early_config._ignored_config_files = found[3]
    early_config._inicache.clear()
    early_config._parser.extra_info.update(rootdir=str(rootpath), inifile=str(inipath))
    if early_config.known_args_namespace.confcutdir == old_cut:  # pytest's default, from the first guess
        early_config.known_args_namespace.confcutdir = str(inipath.parent if inipath else rootpath)
    if early_config.getini("pythonpath"):  # pytest put the first guess's ini `pythonpath` on sys.path
        early_config._configure_python_path()
