"""pyproject.toml states ranges a user's project can live with; constraints.txt pins, within them, what this
venv holds. Read with `packaging` (pip's own requirement parser) and checked against importlib.metadata."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
RUNTIME = [Requirement(text) for text in PROJECT["dependencies"]]
EXTRAS = {name: [Requirement(text) for text in reqs] for name, reqs in PROJECT["optional-dependencies"].items()}


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        text = line.split("#")[0].strip()
        if text:
            req = Requirement(text)
            (spec,) = req.specifier
            assert spec.operator == "==", f"constraints.txt: {text} is not an exact pin"
            pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def test_every_requirement_is_pinned_inside_its_range():
    pins = _pins()
    for req in [*RUNTIME, *(r for reqs in EXTRAS.values() for r in reqs)]:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} has no exact pin in constraints.txt"
        assert req.specifier.contains(pins[name]), f"constraints.txt pins {name}=={pins[name]} outside {req}"


def test_runtime_dependencies_are_ranges_except_the_abi_bound_executorch():
    exact = [str(r) for r in RUNTIME if any(s.operator == "==" for s in r.specifier)]
    assert exact == ["executorch==1.5.1"]
    torch = next(r for r in RUNTIME if r.name == "torch")
    assert torch.specifier.contains("2.13.0") and not torch.specifier.contains("2.14.0")


def test_test_and_mutation_tools_are_only_in_extras():
    runtime = {canonicalize_name(r.name) for r in RUNTIME}
    assert not runtime & {"hypothesis", "pytest-xdist", "mutmut", "pytest-embedded", "xmlschema"}


def test_this_venv_holds_the_pinned_versions():
    """What `make setup` installed is what constraints.txt says (torch's local `+cpu` label aside)."""
    for name, pin in _pins().items():
        if name == "mutmut":  # installed by `make mutation` only
            continue
        installed = Version(metadata.version(name))
        assert Version(installed.public) == pin, f"{name}: venv has {installed}, constraints.txt pins {pin}"
