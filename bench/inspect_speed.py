"""`hil inspect` end to end against bare `Inspector(...)` + `to_dataframe()`, each in a fresh process.

The dump: a 30-operator CPU-only program run 1000 times by the host runtime, about 61,000 events
(OPERATOR_CALL and native_call_* per operator, Method::execute per run, the load events). Both sides
read the same files from disk and print nothing; the ratio is hil inspect / bare Inspector.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from _common import report  # noqa: E402

OPS = 30
RUNS = 1000

BARE = """
import sys
from executorch.devtools import Inspector
Inspector(etdump_path=sys.argv[1], etrecord=sys.argv[2]).to_dataframe()
"""


class ManyOps(torch.nn.Module):
    """30 cheap element-wise operators in a row: many events, little compute."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(OPS // 2):
            x = torch.sigmoid(x * (1.0 + i / 100))
        return x


def make_dump(folder: Path) -> tuple[Path, Path, int]:
    """Export, run RUNS times on the host runtime; returns the dump, the ETRecord and its event count."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    example = (torch.randn(1, 8),)
    edge = to_edge_transform_and_lower(torch.export.export(ManyOps(), example), generate_etrecord=True)
    program = edge.to_executorch(ExecutorchBackendConfig())
    program.get_etrecord().save(str(folder / "etrecord.bin"))
    buffer = program.buffer
    module = _load_for_executorch_from_buffer(buffer, enable_etdump=True, debug_buffer_size=0)
    for _ in range(RUNS):
        module.forward(example)
    module.write_etdump_result_to_file(str(folder / "trace.etdump"), str(folder / "debug.bin"))
    del module, buffer
    dump = deserialize_from_etdump_flatcc((folder / "trace.etdump").read_bytes())
    return folder / "trace.etdump", folder / "etrecord.bin", sum(len(r.events or []) for r in dump.run_data)


def hil_command() -> list[str]:
    """The `hil` console script beside this interpreter, as a user runs it; `python -m hil.cli.main` without one.

    (`python -m hil.cli.main` measured about 0.5 s slower on this dump, nearly all of it extra system time;
    the console script is what `pip install` gives a user.)
    """
    script = Path(sys.executable).with_name("hil")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hil.cli.main"]


def fresh(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=HERE.parent)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hil-inspect-bench-") as tmp:
        dump, etrecord, events = make_dump(Path(tmp))
        harness_cmd = [*hil_command(), "inspect", str(dump), "--etrecord", str(etrecord), "--ns", "--json"]
        bare_cmd = [sys.executable, "-c", BARE, str(dump), str(etrecord)]
        harness, bare = [], []
        for _ in range(args.repeats):  # interleaved, so machine load hits both sides alike
            bare.append(fresh(bare_cmd))
            harness.append(fresh(harness_cmd))
    report(f"analysing a {events}-event ETDump in a fresh process", "bare Inspector + to_dataframe()", bare,
           "hil inspect --json", harness)


if __name__ == "__main__":
    main()
