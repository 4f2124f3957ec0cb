"""The third-party noise et-hil silences: torch/torchao/executorch announce deprecations and optional
kernels they could not load on every import, and on a bench console or a first `pytest --board qemu`
that buries the harness's own lines. One list, applied by both front ends: the `hil` command as
warning filters (`-W` and PYTHONWARNINGS are applied after them, so they still win), the pytest
plugin as `filterwarnings` ini lines put before the project's own (so its ini and `-W` still win).
"""

from __future__ import annotations

import logging
import warnings

# The modules whose warnings are noise to a harness user (a regular expression, matched at the start).
NOISY_MODULES = r"(torch|torchao|executorch|copyreg)"
NOISY_CATEGORIES: tuple[type[Warning], ...] = (DeprecationWarning, FutureWarning, UserWarning)
# executorch still reads its resources through importlib.resources' legacy functions, which warn from there.
LEGACY_RESOURCES = r"importlib\.resources\._legacy"
# Loggers of those packages that report what they could not load; only their errors are kept.
NOISY_LOGGERS = ("torchao", "torch.utils._pytree", "torch._export")


def filter_specs() -> list[str]:
    """The filters in pytest's `filterwarnings` spelling (`action:message:category:module`)."""
    specs = [f"ignore::{category.__name__}:{NOISY_MODULES}" for category in NOISY_CATEGORIES]
    return [*specs, f"ignore::DeprecationWarning:{LEGACY_RESOURCES}", "ignore::FutureWarning"]


def quiet_third_party() -> None:
    """Apply the filters to this process (the command line) and turn the noisy loggers down."""
    for category in NOISY_CATEGORIES:
        warnings.filterwarnings("ignore", category=category, module=NOISY_MODULES)
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=LEGACY_RESOURCES)
    warnings.filterwarnings("ignore", category=FutureWarning)
    quiet_loggers()


def quiet_loggers() -> None:
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
