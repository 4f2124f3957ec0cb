"""The tensors a run feeds the target and reads back: their specs from the .pte, their bytes, their files.

A program's inputs and outputs are described by its method meta (executorch.runtime on the host),
so inputs that do not fit the program are refused before an image is built or flashed, naming the
input; the firmware's table (hil.target.tensor_io) is checked against the same specs on the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base.errors import InputError
from hil.records.validate.fields import one_line

if TYPE_CHECKING:
    import torch

# ExecuTorch ScalarType codes (runtime/core/portable_type/scalar_type.h) -> torch dtype names.
SCALAR_TYPES: dict[int, str] = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 7: "float64",
    11: "bool", 15: "bfloat16",
}
INPUT_SUFFIXES = (".pt", ".npz")
# numpy.savez writes a zip (numpy/lib/npyio.py, savez -> zipfile_factory); numpy.load reads a file that does not
# start with these bytes as a pickle, and refuses it with advice to allow pickles, which is no fix for a damaged
# file: so a .npz that is no zip is said to be one first (APPNOTE.TXT 4.3.7: a local file header's signature).
ZIP_MAGIC = b"PK\x03\x04"
# Where torch.load(weights_only=True) says what it found in the file, after its advice.
WEIGHTS_ERROR = "WeightsUnpickler error:"
# torch's advice after its finding: allowlist the file's globals (as unsafe as weights_only=False).
ALLOWLIST_ADVICE = " Please use `torch.serialization.add_safe_globals"


@dataclass(frozen=True)
class TensorSpec:
    """A tensor's dtype (ExecuTorch ScalarType code) and shape, as a program or a firmware table states it."""

    dtype: int
    shape: tuple[int, ...]

    @property
    def dtype_name(self) -> str:
        return SCALAR_TYPES.get(self.dtype, f"ScalarType {self.dtype}")

    @property
    def nbytes(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count * torch_dtype(self.dtype).itemsize

    def describe(self) -> str:
        return f"{self.dtype_name} {list(self.shape)}"


@dataclass(frozen=True)
class InputTensor:
    """One input as the target gets it: its position in the method, its spec and its bytes (little endian)."""

    index: int
    spec: TensorSpec
    data: bytes


@dataclass(frozen=True)
class ProgramIO:
    """The tensor inputs and outputs of a program's method; None for a position that is no tensor."""

    inputs: tuple[TensorSpec | None, ...]
    outputs: tuple[TensorSpec | None, ...]


def torch_dtype(code: int) -> "torch.dtype":
    """The torch dtype of an ExecuTorch ScalarType code; InputError for one et-hil cannot read."""
    import torch

    name = SCALAR_TYPES.get(code)
    if name is None:
        raise InputError(f"ExecuTorch dtype code {code} is not one et-hil reads ({sorted(SCALAR_TYPES)})")
    return getattr(torch, name)


def scalar_type(dtype: "torch.dtype") -> int | None:
    """The ExecuTorch ScalarType code of a torch dtype, or None when the table has none."""
    name = str(dtype).removeprefix("torch.")
    return next((code for code, known in SCALAR_TYPES.items() if known == name), None)


def program_io(pte: Path, method: str = "forward") -> ProgramIO:
    """The method meta of `pte` read by the host runtime: the spec of every tensor input and output."""
    from executorch.runtime import Runtime

    from hil.base.native_log import native_lines

    data = Path(pte).read_bytes()
    try:
        with native_lines(f"inputs: read the method meta of {Path(pte).name}"):
            meta = Runtime.get().load_program(data).metadata(method)
    except Exception as exc:  # the binding raises RuntimeError or ValueError for a bad program
        raise InputError(f"{pte}: cannot read method '{method}': {type(exc).__name__}: {exc}") from exc

    def spec(read: Any, index: int) -> TensorSpec | None:
        try:
            info = read(index)
        except Exception:  # noqa: BLE001  (a position that holds no tensor: an int, a None)
            return None
        return TensorSpec(int(info.dtype()), tuple(int(s) for s in info.sizes()))

    return ProgramIO(tuple(spec(meta.input_tensor_meta, i) for i in range(meta.num_inputs())),
                     tuple(spec(meta.output_tensor_meta, i) for i in range(meta.num_outputs())))


def check_inputs_path(path: Path) -> Path:
    """`path` when it can be an inputs file: a readable file named .pt or .npz, a .npz being a zip; InputError (one
    line naming the file) otherwise. Needs no torch: `hil run` calls it before the frameworks' import."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"inputs file {path} is a folder, not a file")
    if not path.is_file():
        raise InputError(f"inputs file {path} does not exist")
    if path.suffix not in INPUT_SUFFIXES:
        raise InputError(f"inputs file {path} is not {' or '.join(INPUT_SUFFIXES)}")
    try:
        with path.open("rb") as file:
            head = file.read(len(ZIP_MAGIC))
    except OSError as exc:
        raise InputError(f"inputs file {path} cannot be read: {exc.strerror or exc}") from exc
    if path.suffix == ".npz" and head != ZIP_MAGIC:
        what = f"it starts with {head!r}" if head else "an empty file"
        raise InputError(f"inputs file {path} is not a .npz (a zip of .npy arrays, numpy.savez): {what}")
    return path


def load_inputs_file(path: Path) -> tuple[list[str], list["torch.Tensor"]]:
    """Names and tensors of a `--hil-inputs` file: a .pt (a tensor, or a tuple/list of them) or a .npz (in order)."""
    import torch

    path = check_inputs_path(path)
    try:
        if path.suffix == ".npz":
            import numpy as np

            with np.load(path, allow_pickle=False) as arrays:
                names = list(arrays.files)
                return names, [torch.from_numpy(np.ascontiguousarray(arrays[name])) for name in names]
        loaded = torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001  (a corrupt file raises whatever its reader raises)
        raise InputError(f"inputs file {path} cannot be read: {reader_error(exc)}") from exc
    tensors = [loaded] if isinstance(loaded, torch.Tensor) else list(loaded) if isinstance(loaded, (tuple, list)) else None
    if not tensors or not all(isinstance(t, torch.Tensor) for t in tensors):
        raise InputError(f"inputs file {path} must hold a tensor or a tuple/list of tensors, not {type(loaded).__name__}")
    return [f"input {i}" for i in range(len(tensors))], tensors


def reader_error(exc: Exception) -> str:
    """A reader's exception as one line: torch's several lines of advice (load with weights_only=False,
    which would run the file's code) are no fix for a damaged data file, so only its finding is kept."""
    text = str(exc)
    if WEIGHTS_ERROR in text:
        text = WEIGHTS_ERROR + text.split(WEIGHTS_ERROR, 1)[1].split("Check the documentation", 1)[0]
        text = text.split(ALLOWLIST_ADVICE, 1)[0]  # allowlisting the file's global is the same unsafe fix
    return f"{type(exc).__name__}: {one_line(text) or 'no detail (an empty or cut-off file?)'}"


def non_finite(tensor: "torch.Tensor") -> tuple[int, int]:
    """(NaN count, infinity count) of a tensor; (0, 0) for an integer or boolean one."""
    import torch

    if not (tensor.is_floating_point() or tensor.is_complex()):
        return 0, 0
    values = torch.view_as_real(tensor) if tensor.is_complex() else tensor
    return int(torch.isnan(values).sum()), int(torch.isinf(values).sum())


def check_finite(names: list[str], tensors: list["torch.Tensor"], source: str) -> None:
    """InputError naming the first input holding a NaN or an infinity, and how many: every output would be
    NaN and the figures (top-1 100%: NaN against NaN) would say nothing, so such inputs are refused unless
    the user allows them (--allow-nonfinite-inputs, pytest --hil-allow-nonfinite-inputs)."""
    for name, tensor in zip(names, tensors):
        nan, inf = non_finite(tensor)
        if nan or inf:
            raise InputError(f"{source}: {name} holds {nan + inf} non-finite value(s) of {tensor.numel()} ({nan} NaN,"
                             f" {inf} infinite); refused before any image is built (--allow-nonfinite-inputs or"
                             " pytest --hil-allow-nonfinite-inputs lets them through)")


def check_inputs(names: list[str], tensors: list["torch.Tensor"], io: ProgramIO, source: str, *,
                 allow_nonfinite: bool = False) -> tuple[InputTensor, ...]:
    """`tensors` as the program's tensor inputs, in order; InputError naming the first that does not fit,
    or (unless `allow_nonfinite`) the first that holds a NaN or an infinity."""
    wanted = [(index, spec) for index, spec in enumerate(io.inputs) if spec is not None]
    if len(tensors) != len(wanted):
        raise InputError(f"{source}: {len(tensors)} tensor(s) given, the program takes {len(wanted)} tensor input(s)"
                         f" ({', '.join(spec.describe() for _, spec in wanted)})")
    out = []
    for name, tensor, (index, spec) in zip(names, tensors, wanted):
        got = TensorSpec(scalar_type(tensor.dtype) if scalar_type(tensor.dtype) is not None else -1, tuple(tensor.shape))
        if got != spec:
            shown = f"{str(tensor.dtype).removeprefix('torch.')} {list(tensor.shape)}"
            raise InputError(f"{source}: {name} is {shown}, but the program's input {index} is {spec.describe()};"
                             " refused before flashing")
        out.append(InputTensor(index, spec, tensor_bytes(tensor)))
    if not allow_nonfinite:
        check_finite(names, tensors, source)
    return tuple(out)


def tensor_bytes(tensor: "torch.Tensor") -> bytes:
    """The tensor's elements in row-major order, little endian (the Cortex-M33's and the host's order)."""
    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes()


def tensor_from_bytes(data: bytes, spec: TensorSpec) -> "torch.Tensor":
    """The tensor `spec` describes over `data` (a copy: the bytes may come from a read-only buffer)."""
    import torch

    if len(data) != spec.nbytes:
        raise ValueError(f"{len(data)} bytes cannot be a {spec.describe()} tensor ({spec.nbytes} bytes)")
    if not data:
        return torch.empty(spec.shape, dtype=torch_dtype(spec.dtype))
    return torch.frombuffer(bytearray(data), dtype=torch_dtype(spec.dtype)).reshape(spec.shape).clone()
