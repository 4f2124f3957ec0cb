"""The kernel choice for int8 on the Cortex-M33, side by side: float portable, int8 portable, int8 CMSIS-NN.

For DS-CNN and ResNet8 (MLPerf Tiny, as ExecuTorch ships them), each lowered three ways --
`--delegate none` (float portable kernels), `--delegate none --quantize` (quantize/dequantize around the
float portable kernels: ExecuTorch's quantized portable kernels), `--delegate cortex-m` (CMSIS-NN) -- and run once
on the QEMU runtime image: instructions per inference (the profile's `Method::execute`, exact under icount, so
one run is the figure), per multiply-accumulate (MACs counted here from the eager model's Conv2d/Linear layers),
and the RT700 image's size (`hil rt700-image`, arm-none-eabi-size of the ELF: text + data, the flash it takes).
The choices are taken in turns per model (float, int8, CMSIS-NN), and the load is printed with the figures.

    HIL_CACHE_DIR=... RT700_SDK_DIR=... .venv/bin/python bench/int8_kernels.py [--no-rt700] [MODEL ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _common import load_line, source_workspace

CHOICES = (("float portable", "none", False), ("int8 portable", "none", True), ("int8 CMSIS-NN", "cortex-m", False))
MODELS = ("ds_cnn", "resnet8")


@dataclass(frozen=True)
class Figure:
    model: str
    choice: str
    instructions: int | None  # None: the run failed (said on its own line)
    macs: int
    image_bytes: int | None


def macs(model: str) -> int:
    """Multiply-accumulates of one inference of `model`'s eager module, from its Conv2d and Linear layers."""
    import torch

    from hil.aot.models import load_model

    source = load_model(model)
    total = 0

    def count(layer: torch.nn.Module, _inputs: object, output: torch.Tensor) -> None:
        nonlocal total
        if isinstance(layer, torch.nn.Conv2d):
            kh, kw = layer.kernel_size
            total += output.numel() * (layer.in_channels // layer.groups) * kh * kw
        elif isinstance(layer, torch.nn.Linear):
            total += output.numel() * layer.in_features

    hooks = [m.register_forward_hook(count) for m in source.module.modules()
             if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        source.module(*source.example_inputs)
    for hook in hooks:
        hook.remove()
    return total


def instructions(model: str, delegate: str, quantize: bool, work: Path) -> int:
    """Emulated instructions of one inference's Method::execute on the QEMU runtime image."""
    from hil.config.board_config import load_board_config
    from hil.run.pipeline import RunRequest, run_profile

    board = load_board_config("qemu").with_overrides({"qemu.firmware": "runtime"})
    out = work / f"{model}-{delegate}-{int(quantize)}"
    result = run_profile(RunRequest(model=model, board=board, out_dir=out, delegate=delegate, quantize=quantize,
                                    iterations=1, required_firmware=None))
    (method,) = [e for e in result.profile["events"] if e["kind"] == "method"]
    per_us = result.profile["time_base"]["instructions_per_us"]
    return round(method["times_us"][0] * per_us)


def rt700_image_bytes(model: str, delegate: str, quantize: bool, work: Path) -> int:
    """text + data of the RT700 image of the program (what the XIP flash holds), as `hil rt700-image` builds it:
    in the RT700 runtime folder of $HIL_CACHE_DIR (its libraries compiled once, each program a link; the operator
    list follows the model, which firmware/cmake/hil_executorch.cmake makes its rule depend on)."""
    out = work / f"rt700-{model}-{delegate}-{int(quantize)}"
    command = [sys.executable, "-m", "hil.cli.main", "rt700-image", "--model", model, "--delegate", delegate,
               "--out", str(out)] + (["--quantize"] if quantize else [])
    subprocess.run(command, check=True, timeout=3600, capture_output=True)
    size = subprocess.run(["arm-none-eabi-size", str(out / "hil_rt700.elf")], check=True, timeout=60,
                          capture_output=True, text=True).stdout.splitlines()[1].split()
    return int(size[0]) + int(size[1])


def _said(what: str, measure: Callable[[], int]) -> int | None:
    """`measure()`, or None with one line saying why it failed: one choice that cannot run or build leaves the
    others measured."""
    try:
        return measure()
    except Exception as exc:
        stderr = getattr(exc, "stderr", None)  # a child's message is its last line, an exception's its first
        stderr = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
        lines = [line for line in (stderr or str(exc)).splitlines() if line.strip()]
        print(f"{what}: failed: {((lines[-1] if stderr else lines[0]) if lines else type(exc).__name__)[:300]}")
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--no-rt700", action="store_true", help="leave out the RT700 image sizes (minutes each)")
    args = parser.parse_args()
    source_workspace()
    print(f"at the start: {load_line()}")
    figures = []
    with tempfile.TemporaryDirectory(prefix="int8-kernels-") as tmp:
        for model in args.models:
            count = macs(model)
            for choice, delegate, quantize in CHOICES:
                ran = _said(f"{model} {choice}", lambda: instructions(model, delegate, quantize, Path(tmp)))
                size = None if args.no_rt700 else _said(f"{model} {choice} RT700 image",
                                                        lambda: rt700_image_bytes(model, delegate, quantize, Path(tmp)))
                figures.append(Figure(model, choice, ran, count, size))
    print(f"{'model':<10} {'kernels':<16} {'instructions':>14} {'per MAC':>8} {'vs float':>8} {'RT700 image':>12}")
    for figure in figures:
        base = next(f for f in figures if f.model == figure.model and f.choice == CHOICES[0][0])
        size = "-" if figure.image_bytes is None else f"{figure.image_bytes:,} B"
        if figure.instructions is None:
            print(f"{figure.model:<10} {figure.choice:<16} {'-':>14} {'-':>8} {'-':>8} {size:>12}")
            continue
        ratio = "-" if base.instructions is None else f"{figure.instructions / base.instructions:.3f}"
        print(f"{figure.model:<10} {figure.choice:<16} {figure.instructions:>14,} "
              f"{figure.instructions / figure.macs:>8.2f} {ratio:>8} {size:>12}")
    print(f"MACs per inference: " + ", ".join(f"{m} {macs(m):,}" for m in args.models))
    print(f"at the end: {load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
