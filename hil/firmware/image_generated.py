"""What the QEMU runtime image's CMake would ask Python for, computed once in the harness's own process.

Why: the image's configure needs the program's portable kernel files and the other kernel libraries it calls
(hil.firmware.kernel_sources) and,
for a program lowered to the simulated Neutron backend, the count and C table of its delegate calls
(hil.firmware.sim_neutron_table). Asked from CMake, each is a `python -m` child that imports torch and
executorch.exir to read the .pte: about 7 s apiece on the 2-core machine, three of them for a simulated
program, so most of a new model's image time. The harness has both packages loaded already; it writes
the answers into files beside the model's copy and passes them (HIL_KERNEL_LIST, HIL_SIM_TABLE_SOURCE).
A build by hand passes neither, and the CMake asks the modules itself as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hil.base import atomic
from hil.firmware.kernel_sources import build_sources, program_libraries
from hil.firmware.sim_neutron_table import delegate_steps, table_source

# What HIL_SIM_TABLE_SOURCE says for a program with no simulated-Neutron delegate call, and HIL_KERNEL_LIBRARIES
# for one that calls no quantized or Cortex-M operator.
NO_SIM_TABLE = "none"
NO_LIBRARIES = "none"


@dataclass(frozen=True)
class GeneratedInputs:
    """The files one image's configure reads instead of asking Python."""

    kernel_list: Path  # one absolute source path per line: kernels, pattern helpers (none: all delegated)
    sim_table: Path | None  # the simulated-Neutron table's C source, None for a program without one
    libraries: tuple[str, ...] = ()  # the other kernel libraries it calls (hil.firmware.kernel_sources.LIBRARIES)

    def cmake_options(self) -> list[str]:
        return [f"-DHIL_KERNEL_LIST={self.kernel_list}",
                f"-DHIL_SIM_TABLE_SOURCE={self.sim_table if self.sim_table is not None else NO_SIM_TABLE}",
                f"-DHIL_KERNEL_LIBRARIES={';'.join(self.libraries) or NO_LIBRARIES}"]


def write_generated(model: Path, executorch_root: Path, *, npu_clock_mhz: float, tick_mhz: float) -> GeneratedInputs:
    """Write `model`'s kernel list (and its simulated-Neutron table, if it has delegate calls) beside it.

    Raises BuildError, as the CMake would fail, for an operator without a portable kernel."""
    kernels = build_sources(model, executorch_root)
    kernel_list = atomic.write_text(model.with_suffix(".kernels.txt"), "".join(f"{path}\n" for path in kernels))
    sim_table = None
    if delegate_steps(model):
        sim_table = atomic.write_text(model.with_suffix(".sim_table.c"), table_source(model, npu_clock_mhz, tick_mhz))
    libraries = tuple(lib.name for lib in program_libraries(model, executorch_root))
    return GeneratedInputs(kernel_list, sim_table, libraries)
