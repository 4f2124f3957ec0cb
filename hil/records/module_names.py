"""Which of the user's layers an event ran: the nn.Module path and the source line, from the ETRecord.

An event named `native_call_convolution.out` says which kernel ran, not which of the user's
convolutions. The Inspector knows: for every event it maps to graph nodes (through the debug handles,
and for a delegate's events through the delegate's debug-handle map) it keeps, per node, the node's
`nn_module_stack` (outermost module first, each entry `(path, type)`) in `Event.module_hierarchy`
and its `stack_trace` text in `Event.stack_traces` (ExecuTorch 1.5.1,
devtools/inspector/_inspector.py, `Event._associate_with_op_graph_nodes`). This module reduces those
to what a person calls the layer: the innermost module's path (`conv2`, `head.1`) and the line of the
user's own code that called it (`models.py:13`), the deepest frame outside torch's own package.

Nothing here imports torch or ExecuTorch: it reads plain mappings and strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

# One frame of a Python stack trace as torch.fx records it: `File "/x/models.py", line 13, in forward`.
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
# Frames inside torch's own package (nn.Module.__call__, Conv2d.forward, ...) are not the user's layer.
_FRAMEWORK = ("torch",)


def module_path(nn_module_stack: Mapping[str, Any] | None) -> str | None:
    """The innermost module's path in one node's `nn_module_stack`; None for the root module or none.

    The stack maps a key to `(path, type)`, outermost first; the root module's path is ''. An op called
    in the top-level `forward` (`torch.relu(x)`) has only the root, so it names no layer.
    """
    for entry in reversed(list((nn_module_stack or {}).values())):
        path = entry[0] if isinstance(entry, (tuple, list)) and entry else None
        if isinstance(path, str) and path:
            return _plain(path)
    return None


def _plain(path: str) -> str:
    """`L['self'].conv2` (the form of some torch versions) -> `conv2`; an FQN is returned as is."""
    return re.sub(r"^L\['self'\]\.?", "", path)


def _framework_frame(file: str) -> bool:
    parts = PurePath(file).parts
    return any(p in ("site-packages", "dist-packages") and parts[i + 1:i + 2] in [(n,) for n in _FRAMEWORK]
               for i, p in enumerate(parts))


def source_line(stack_trace: str | None) -> str | None:
    """`models.py:13`: the deepest frame of a node's stack trace outside torch; None when there is none."""
    frames = [(m["file"], m["line"]) for m in _FRAME.finditer(stack_trace or "")]
    own = [(f, line) for f, line in frames if not _framework_frame(f)]
    if not own:
        return None
    file, line = own[-1]
    return f"{PurePath(file).name}:{line}"


def _unique(items: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def event_places(module_hierarchy: Mapping[str, Any] | None,
                 stack_traces: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(module paths, source lines) of one Inspector event, each in the Inspector's node order, once each."""
    modules = _unique(module_path(stack) for stack in (module_hierarchy or {}).values())
    sources = _unique(source_line(trace) for trace in (stack_traces or {}).values() if isinstance(trace, str))
    return modules, sources


def where(modules: Iterable[str], sources: Iterable[str]) -> str:
    """`conv2 (models.py:13)`: the event's layers and their lines as one short text ('' when unknown)."""
    modules, sources = list(modules), list(sources)
    text = ", ".join(modules)
    lines = ", ".join(sources)
    if text and lines:
        return f"{text} ({lines})"
    return text or (f"({lines})" if lines else "")
