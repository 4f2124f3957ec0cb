"""Names of the run folders a test's `hil_profile` calls write: one folder per run, never shared.

A folder is named after what was run: the model (a file model by its file's stem plus its factory,
`net-factory`, since every file following the README's convention calls its factory `factory`; a
built-in by its name) and the delegate asked for (`net-factory-neutron-sim`). Two calls of one test
that would meet in one folder (the same model twice, say) get `-2`, `-3`, ... after the first, so
no run's files, profile or JUnit figures are ever replaced by another's.
"""

from __future__ import annotations

from pathlib import Path


def model_label(model: str) -> str:
    """`path/to/net.py:factory` -> `net-factory`; a built-in name as it is."""
    path_text, sep, factory = model.rpartition(":")
    if sep and path_text.endswith(".py"):
        return f"{Path(path_text).stem}-{factory}"
    return model


def run_label(model: str, delegate: str | None) -> str:
    """What a run folder is named after: the model and the delegate (`none` for a CPU-only program)."""
    return f"{model_label(model)}-{delegate or 'none'}"


class RunNames:
    """Hands out one test's run folder names: the label the first time, then `label-2`, `label-3`, ..."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def take(self, name: str) -> str:
        chosen, count = name, 1
        while chosen in self._used:
            count += 1
            chosen = f"{name}-{count}"
        self._used.add(chosen)
        return chosen
