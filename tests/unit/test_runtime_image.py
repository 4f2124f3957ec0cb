"""The QEMU runtime image's pieces that need no build: which kernels a program needs, which image a run
gets, what its numbers are, and what a failed build says, what its runtime key holds and how a cache entry copies its sources. Truths are
written out by hand here."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest
from stamped_workspace import PINS, write_workspace

from hil.config.board_config import load_board_config
from hil.cli.main import exit_code_for
from hil.base.errors import BuildError, EnvironmentFault
from hil.firmware import kernel_sources as ks
from hil.firmware.qemu_firmware import choose_qemu_firmware, time_base
from hil.firmware.runtime_image import RuntimeSources, _first_error, Locked, _root, _runtime_key
from hil.firmware.runtime_sources import entry_flatc, file_sha256, sync_firmware
from hil.firmware.sim_neutron_table import npu_ticks_per_pal_tick

FUNCTIONS_YAML = textwrap.dedent("""\
    - op: add.out
      kernels:
        - arg_meta: null
          kernel_name: torch::executor::add_out

    - op: _softmax.out
      kernels:
        - arg_meta: null
          kernel_name: torch::executor::softmax_out

    - op: tanh.out
      kernels:
        - arg_meta: null
          kernel_name: torch::executor::tanh_out

    - op: nokernel.out

    - func: dim_order_ops::_clone_dim_order.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
      kernels:
        - arg_meta: null
          kernel_name: torch::executor::_clone_dim_order_out
    """)


def _tree(root: Path) -> Path:
    """A stand-in ExecuTorch tree: functions.yaml, five operator files, the prim ops file."""
    (root / "kernels" / "portable" / "cpu").mkdir(parents=True)
    (root / "kernels" / "prim_ops").mkdir(parents=True)
    (root / ks.FUNCTIONS_YAML).write_text(FUNCTIONS_YAML)
    cpu = root / ks.KERNEL_DIR
    (cpu / "op_add.cpp").write_text("Tensor& add_out(\n    KernelRuntimeContext& ctx, const Tensor& a) {}\n"
                                    "Tensor& add_scalar_out(KernelRuntimeContext& ctx) {}\n")
    (cpu / "op_softmax.cpp").write_text("// softmax_out is here\nTensor& softmax_out(RuntimeContext& ctx) {}\n")
    (cpu / "op_clone_dim_order.cpp").write_text("Tensor& _clone_dim_order_out(KernelRuntimeContext& context) {}\n")
    # Defined through pattern.h's macro, as 25 of the pinned tree's unary kernels are (op_tanh.cpp, op_exp.cpp...).
    (cpu / "op_tanh.cpp").write_text("DEFINE_UNARY_UFUNC_REALHBBF16_TO_FLOATHBF16(tanh_out, std::tanh)\n")
    (cpu / "op_atanh.cpp").write_text("DEFINE_UNARY_UFUNC_REALHBBF16_TO_FLOATHBF16(atanh_out, std::atanh)\n")
    (root / ks.PRIM_OPS).write_text('Kernel("aten::sym_size.int", ...)\n')
    (root / ks.PATTERN_DIR).mkdir()
    (root / ks.PATTERN_DIR / "unary_ufunc_realhbf16.cpp").write_text("Tensor& unary_ufunc_realhbf16(...) {}\n")
    return root


def test_functions_yaml_maps_each_operator_to_its_kernel(tmp_path) -> None:
    table = ks.kernel_functions(_tree(tmp_path) / ks.FUNCTIONS_YAML)
    assert table == {"aten::add.out": "torch::executor::add_out", "aten::_softmax.out": "torch::executor::softmax_out",
                     "aten::tanh.out": "torch::executor::tanh_out",
                     "dim_order_ops::_clone_dim_order.out": "torch::executor::_clone_dim_order_out"}


def test_each_operator_gets_the_file_that_defines_its_kernel(tmp_path, monkeypatch) -> None:
    root = _tree(tmp_path)
    monkeypatch.setattr(ks, "program_operators", lambda _pte: [
        "aten::_softmax.out", "aten::add.out", "aten::sym_size.int", "aten::tanh.out",
        "dim_order_ops::_clone_dim_order.out"])
    found = {item.operator: item.source.name for item in ks.kernel_sources(Path("m.pte"), root)}
    # sym_size is a prim op the runtime registers itself; softmax_out's comment is not its definition; tanh_out
    # comes from a macro, and atanh_out (whose name ends in tanh_out) is not it.
    assert found == {"aten::_softmax.out": "op_softmax.cpp", "aten::add.out": "op_add.cpp",
                     "aten::tanh.out": "op_tanh.cpp", "dim_order_ops::_clone_dim_order.out": "op_clone_dim_order.cpp"}


def test_an_operator_without_a_portable_kernel_is_named(tmp_path, monkeypatch) -> None:
    root = _tree(tmp_path)
    monkeypatch.setattr(ks, "program_operators", lambda _pte: ["aten::nokernel.out", "aten::mystery.out", "aten::add.out"])
    with pytest.raises(BuildError) as info:
        ks.kernel_sources(Path("m.pte"), root)
    assert "m.pte: no kernel in" in str(info.value)
    assert ("for aten::nokernel.out, aten::mystery.out (the QEMU runtime image runs ExecuTorch's portable, quantized "
            "and Cortex-M kernels only)") in str(info.value)


QUANTIZED_YAML = textwrap.dedent("""\
    - func: quantized_decomposed::quantize_per_tensor.out(Tensor input, *, Tensor(a!) out) -> Tensor(a!)
      variants: function
      kernels:
        - arg_meta: null
          kernel_name: torch::executor::quantize_per_tensor_out
    """)
CORTEX_M_YAML = textwrap.dedent("""\
    # Copyright
    - func: cortex_m::quantized_conv2d.out(Tensor input, *, Tensor(a!) out) -> Tensor(a!)
      variants: function
      kernels:
        - arg_meta: null
          kernel_name: cortex_m::quantized_conv2d_out
    """)


def test_quantized_and_cortex_m_operators_come_from_their_libraries_and_no_portable_file(tmp_path, monkeypatch) -> None:
    """An int8 program: its quantized_decomposed and cortex_m operators are registered from ExecuTorch's
    quantized_kernels and cortex_m_kernels (the yamls' entries, written here as the pinned tree has them), its aten
    operators from their portable files; the image's CMake is told which libraries (in LIBRARIES' order)."""
    root = _tree(tmp_path / "et")
    for lib, text in ((ks.QUANTIZED, QUANTIZED_YAML), (ks.CORTEX_M, CORTEX_M_YAML)):
        (root / lib.yaml).parent.mkdir(parents=True, exist_ok=True)
        (root / lib.yaml).write_text(text)
    ops = ["aten::add.out", "cortex_m::quantized_conv2d.out", "quantized_decomposed::quantize_per_tensor.out"]
    monkeypatch.setattr(ks, "program_operators", lambda _pte: ops)
    assert [item.source.name for item in ks.kernel_sources(Path("m.pte"), root)] == ["op_add.cpp"]
    assert [lib.target for lib in ks.program_libraries(Path("m.pte"), root)] == ["quantized_kernels", "cortex_m_kernels"]
    monkeypatch.setattr(ks, "program_operators", lambda _pte: ["aten::add.out", "cortex_m::quantized_conv2d.out"])
    assert ks.program_libraries(Path("m.pte"), root) == [ks.CORTEX_M]
    monkeypatch.setattr(ks, "program_operators", lambda _pte: ["aten::add.out"])
    assert ks.program_libraries(Path("m.pte"), root) == []
    # An operator of neither library nor a portable file (cortex_m's namespace, another name) is still named.
    monkeypatch.setattr(ks, "program_operators", lambda _pte: ["cortex_m::quantized_lstm.out"])
    with pytest.raises(BuildError, match="for cortex_m::quantized_lstm.out "):
        ks.kernel_sources(Path("m.pte"), root)


def test_a_failed_build_names_its_first_error_with_file_and_line(tmp_path) -> None:
    log = tmp_path / "build.log"
    log.write_text("[12/96] Building CXX object x.obj\n"
                   "/src/app/main.cpp:42:7: error: 'foo' was not declared in this scope\n"
                   "/src/app/main.cpp:50:1: error: later\n")
    assert _first_error(log) == "/src/app/main.cpp:42:7: error: 'foo' was not declared in this scope"
    log.write_text("-- Configuring\nCMake Error at CMakeLists.txt:74 (add_library):\n"
                   "  No SOURCES given to target: hil_model_kernels\n\n\n-- Configuring incomplete\n")
    assert _first_error(log) == "CMake Error at CMakeLists.txt:74 (add_library): No SOURCES given to target: hil_model_kernels"
    log.write_text("ld: main.cpp.obj: in function `main':\n/src/app/main.cpp:9: undefined reference to `bar'\n")
    assert _first_error(log) == "/src/app/main.cpp:9: undefined reference to `bar'"
    log.write_text("nothing failed here\n")
    assert _first_error(log) is None


def _board(tmp_path: Path, firmware: str, shift: int | None = 2) -> object:
    text = (Path(__file__).resolve().parents[2] / "boards" / "qemu.toml").read_text()
    text = text.replace('firmware = "auto"', f'firmware = "{firmware}"')
    if shift is None:
        text = text.replace("icount_shift = 2", "")
    else:
        text = text.replace("icount_shift = 2", f"icount_shift = {shift}")
    path = tmp_path / "qemu.toml"
    path.write_text(text)
    return load_board_config(path=path)


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    folder = write_workspace(tmp_path / "ws")
    monkeypatch.setenv("RT700_SDK_DIR", str(folder))
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)
    return folder


def test_auto_runs_the_runtime_image_for_cpu_and_simulated_neutron_programs(tmp_path, workspace) -> None:
    cfg = _board(tmp_path, "auto")
    for delegate in ("none", "neutron-sim"):
        chosen = choose_qemu_firmware(cfg, delegate)
        assert (chosen.kind, chosen.workspace, chosen.notice) == ("runtime", workspace, None)
    assert choose_qemu_firmware(cfg, "none", crafted=True).kind == "replay"  # a test's crafted ETDump
    other = choose_qemu_firmware(cfg, "xnnpack")
    assert other.kind == "replay" and "'xnnpack' delegate runs on the replay image" in other.notice


def test_without_sources_auto_replays_and_says_how_to_get_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "nowhere"))
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)
    chosen = choose_qemu_firmware(_board(tmp_path, "auto"), "none")
    assert chosen.kind == "replay" and "`hil sources`" in chosen.notice and str(tmp_path / "nowhere") in chosen.notice
    # Asked for: the machine lacks a part (exit 3), named with where it was looked for; nothing replays.
    with pytest.raises(EnvironmentFault, match="no firmware source workspace at") as asked:
        choose_qemu_firmware(_board(tmp_path, "runtime"), "none")
    assert str(tmp_path / "nowhere") in str(asked.value) and "replay" not in str(asked.value)
    assert exit_code_for(asked.value) == 3
    monkeypatch.setenv("HIL_GIT_BASE", str(tmp_path))  # the user named where sources come from: get them, no replay
    for choice in ("auto", "runtime"):
        based = choose_qemu_firmware(_board(tmp_path, choice), "none")
        assert (based.kind, based.workspace, based.assemble_from) == ("runtime", tmp_path / "nowhere", str(tmp_path))
    assert choose_qemu_firmware(_board(tmp_path, "replay"), "none").kind == "replay"


def test_a_workspace_at_other_pins_is_said_or_brought_to_them_with_hil_git_base(tmp_path, workspace, monkeypatch):
    """Built from, it would give numbers of another ExecuTorch than the installed package names: never silently."""
    et = next(pin for pin in PINS if pin["repo"] == "pytorch/executorch")
    write_workspace(workspace, moved="pytorch/executorch")
    chosen = choose_qemu_firmware(_board(tmp_path, "auto"), "none")
    assert (chosen.kind, chosen.workspace, chosen.assemble_from) == ("runtime", workspace, None)
    assert f"pytorch/executorch at 000000000000, pinned {et['commit'][:12]}" in chosen.notice
    assert "`hil sources`" in chosen.notice
    monkeypatch.setenv("HIL_GIT_BASE", str(tmp_path / "mirror"))
    chosen = choose_qemu_firmware(_board(tmp_path, "auto"), "none")
    assert (chosen.kind, chosen.workspace, chosen.assemble_from) == ("runtime", workspace, str(tmp_path / "mirror"))


def test_the_time_base_states_instructions_at_the_icount_shift(tmp_path, workspace) -> None:
    base = time_base(_board(tmp_path, "auto", shift=2), "runtime")
    # shift 2: 2^2 = 4 ns an instruction, 1000 / 4 = 250 a microsecond, 50 ns (a 20 MHz tick) / 4 = 12.5 a tick.
    assert (base["kind"], base["ns_per_instruction"], base["instructions_per_us"], base["instructions_per_tick"]) == (
        "emulated instructions", 4, 250.0, 12.5)
    assert time_base(_board(tmp_path, "auto", shift=5), "runtime")["instructions_per_tick"] == 1.5625
    assert "vary from run to run" in time_base(_board(tmp_path, "auto", shift=None), "runtime")["note"]
    assert time_base(_board(tmp_path, "auto"), "replay")["kind"] == "replayed"


def test_the_simulated_npu_timer_ratio_is_exact() -> None:
    assert npu_ticks_per_pal_tick(250.0, 20.0) == Fraction(25, 2)
    assert npu_ticks_per_pal_tick(324.0, 20.0) == Fraction(81, 5)


def _firmware_copy(where: Path) -> Path:
    """A copy of the repository's firmware folder at `where` (another install's data, byte for byte)."""
    shutil.copytree(Path(__file__).resolve().parents[2] / "firmware", where, ignore=shutil.ignore_patterns("__pycache__"))
    return where


def test_the_runtime_key_is_the_content_of_its_inputs_never_their_path(tmp_path) -> None:
    a, b = _firmware_copy(tmp_path / "venv-a" / "firmware"), _firmware_copy(tmp_path / "checkout" / "firmware")
    (tmp_path / "fa").write_bytes(b"flatc 24.3.25\n")
    (tmp_path / "fb").write_bytes(b"flatc 24.3.25\n")
    sources = RuntimeSources(tmp_path / "ws-a" / "executorch", b"executorch 1.5.1 abc123\n")
    key = _runtime_key(sources, "arm-none-eabi-gcc 13.2.1", tmp_path / "fa", a)
    assert _runtime_key(RuntimeSources(tmp_path / "ws-b" / "executorch", sources.pins_record),
                        "arm-none-eabi-gcc 13.2.1", tmp_path / "fb", b) == key
    (b / "app" / "main.cpp").write_bytes(b"int main(void) { return 1; }\n")  # the image's source, not the runtime's
    assert _runtime_key(sources, "arm-none-eabi-gcc 13.2.1", tmp_path / "fb", b) == key
    (tmp_path / "fb").write_bytes(b"flatc 25.1.0\n")
    assert _runtime_key(sources, "arm-none-eabi-gcc 13.2.1", tmp_path / "fb", a) != key
    assert _runtime_key(sources, "arm-none-eabi-gcc 14.1.0", tmp_path / "fa", a) != key
    assert _runtime_key(RuntimeSources(sources.executorch, b"executorch 1.5.1 def456\n"),
                        "arm-none-eabi-gcc 13.2.1", tmp_path / "fa", a) != key
    with (b / "cmake" / "hil_executorch.cmake").open("a") as cmake:
        cmake.write("# one more line\n")
    assert _runtime_key(sources, "arm-none-eabi-gcc 13.2.1", tmp_path / "fa", b) != key


def _summary_workspace(root: Path, mirror: str, commit: str) -> Path:
    """A workspace as `hil sources` leaves one: workspace.env, workspace.json naming its own folder and mirror."""
    (root / "executorch").mkdir(parents=True)
    (root / "executorch" / "CMakeLists.txt").write_text("")
    (root / "cmsis-nn").mkdir()
    (root / "cmsis-nn" / "CMakeLists.txt").write_text("")
    (root / "workspace.env").write_text(f"export EXECUTORCH_ROOT={root / 'executorch'}\n"
                                        f"export CMSIS_NN={root / 'cmsis-nn'}\n")
    (root / "workspace.json").write_text(json.dumps({
        "pins": str(root / "pins.toml"), "bench_commits": False, "env": {"EXECUTORCH_ROOT": str(root / "executorch")},
        "repos": [{"repo": "pytorch/executorch", "path": "executorch", "commit": commit, "source": mirror,
                   "absent": []}]}))
    return root


def test_two_workspaces_of_the_same_commits_share_the_runtime_wherever_they_lie(tmp_path) -> None:
    """A wheel user's own sources folder and the checkout's: one runtime build (the key's pins record)."""
    mine = RuntimeSources.from_workspace(_summary_workspace(tmp_path / "mine", "/lab/mirror", "c" * 40))
    theirs = RuntimeSources.from_workspace(_summary_workspace(tmp_path / "theirs", "https://github.com", "c" * 40))
    moved = RuntimeSources.from_workspace(_summary_workspace(tmp_path / "moved", "/lab/mirror", "d" * 40))
    assert mine.pins_record == theirs.pins_record and mine.executorch != theirs.executorch
    assert moved.pins_record != mine.pins_record
    assert mine.cmsis_nn == tmp_path / "mine" / "cmsis-nn"


def test_a_workspace_without_cmsis_nn_is_refused_naming_it(tmp_path) -> None:
    """A workspace assembled before the CMSIS-NN pin: the runtime's Cortex-M kernels could not be built (and CMake
    would fetch CMSIS-NN from the network), so it is the machine's fault, with the way to fix it."""
    root = _summary_workspace(tmp_path / "old", "/lab/mirror", "c" * 40)
    (root / "workspace.env").write_text(f"export EXECUTORCH_ROOT={root / 'executorch'}\n")
    with pytest.raises(EnvironmentFault) as info:
        RuntimeSources.from_workspace(root)
    assert str(info.value).startswith(f"{root} holds no CMSIS-NN checkout (CMSIS_NN in its workspace.env)")
    assert exit_code_for(info.value) == 3


def test_a_cache_reached_through_a_link_builds_in_the_folders_real_path(tmp_path) -> None:
    """CMake records its build folder's absolute path (a CMakeCache.txt made under one name refuses another), so
    a cache whose firmware folder is a link, or that is itself reached by one, names the real folder."""
    real = tmp_path / "real-cache"
    (real / "firmware").mkdir(parents=True)
    linked = tmp_path / "linked-cache"
    linked.symlink_to(real, target_is_directory=True)
    other = tmp_path / "other-cache"
    other.mkdir()
    (other / "firmware").symlink_to(real / "firmware", target_is_directory=True)
    expected = Path(os.path.realpath(real)) / "firmware" / "qemu-runtime" / ("ab" * 12)
    for cache in (real, linked, other):
        assert _root("ab" * 40, cache) == expected


def test_a_folder_that_is_no_workspace_is_an_environment_fault_naming_hil_sources(tmp_path) -> None:
    with pytest.raises(EnvironmentFault) as failure:
        RuntimeSources.from_workspace(tmp_path)
    assert exit_code_for(failure.value) == 3 and str(tmp_path) in str(failure.value)
    assert "`hil sources`" in str(failure.value)


def test_the_entry_configures_from_its_own_copy_rewriting_only_what_changed(tmp_path) -> None:
    firmware, entry = _firmware_copy(tmp_path / "site" / "firmware"), tmp_path / "entry"
    source = sync_firmware(firmware, entry)
    assert source == entry / "src" / "firmware" / "qemu" / "runtime" and (source / "CMakeLists.txt").is_file()
    copy = entry / "src" / "firmware"
    for part in ("cmake", "app", "common", "qemu"):
        for file in (p for p in (firmware / part).rglob("*") if p.is_file()):
            assert (copy / file.relative_to(firmware)).read_bytes() == file.read_bytes(), file
    assert not (copy / "rt700").exists()  # the RT700's sources are not the runtime image's
    old = 1_000_000_000_000_000_000
    for name in ("app/main.cpp", "common/hil_io.c"):
        os.utime(copy / name, ns=(old, old))
    (firmware / "common" / "hil_io.c").write_bytes(b"/* changed */\n")
    (firmware / "app" / "newlib_shims.c").unlink()
    sync_firmware(tmp_path / "site" / "firmware", entry)
    assert (copy / "app" / "main.cpp").stat().st_mtime_ns == old  # same bytes: Ninja sees nothing to rebuild
    assert (copy / "common" / "hil_io.c").read_bytes() == b"/* changed */\n"
    assert (copy / "common" / "hil_io.c").stat().st_mtime_ns != old
    assert not (copy / "app" / "newlib_shims.c").exists()


def test_the_entry_keeps_its_own_flatc_so_no_venv_path_is_recorded(tmp_path) -> None:
    blob = b"\x7fELF a stand-in flatc\n"
    (tmp_path / "venv-a").mkdir()
    (tmp_path / "venv-a" / "flatc").write_bytes(blob)
    own = entry_flatc(tmp_path / "venv-a" / "flatc", tmp_path / "entry")
    assert own == tmp_path / "entry" / "tools" / "flatc" and own.read_bytes() == blob and os.access(own, os.X_OK)
    assert file_sha256(own) == hashlib.sha256(blob).hexdigest()
    shutil.rmtree(tmp_path / "venv-a")  # the first venv is deleted: the entry's copy stays
    (tmp_path / "venv-b").mkdir()
    (tmp_path / "venv-b" / "flatc").write_bytes(blob)
    old = 1_000_000_000_000_000_000
    os.utime(own, ns=(old, old))
    assert entry_flatc(tmp_path / "venv-b" / "flatc", tmp_path / "entry") == own and own.stat().st_mtime_ns == old
    assert entry_flatc(None, tmp_path / "entry") is None


def test_a_cache_folder_that_cannot_be_written_is_a_build_error_naming_it(tmp_path) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder should be\n")
    root = tmp_path / "cache" / "firmware" / "qemu-runtime" / "0123"
    with pytest.raises(BuildError) as info:
        with Locked(root, "the image of m.pte"):
            pass
    assert f"the QEMU runtime cache folder {root} cannot be written" in str(info.value)
    assert "the image of m.pte is not among them" in str(info.value) and "HIL_CACHE_DIR" in str(info.value)


def test_the_harness_writes_the_kernel_list_and_says_none_for_a_program_without_simulated_calls(tmp_path, monkeypatch):
    from hil.firmware import image_generated

    root = _tree(tmp_path)
    model = tmp_path / "models" / "abc.pte"
    model.parent.mkdir()
    model.write_bytes(b"not read: the operators come from the patched reader")
    monkeypatch.setattr(ks, "program_operators", lambda _pte: ["aten::add.out", "aten::_softmax.out"])
    monkeypatch.setattr(image_generated, "delegate_steps", lambda _pte: [])
    made = image_generated.write_generated(model, root, npu_clock_mhz=250.0, tick_mhz=20.0)
    kernels = root / ks.KERNEL_DIR
    # The pattern helpers go with any kernel (ExecuTorch's PATTERN_SRCS are part of its portable kernels' sources).
    assert made.kernel_list.read_text() == (f"{kernels / 'op_add.cpp'}\n{kernels / 'op_softmax.cpp'}\n"
                                            f"{kernels / 'pattern' / 'unary_ufunc_realhbf16.cpp'}\n")
    assert made.sim_table is None and not list(model.parent.glob("*.c"))
    assert made.cmake_options() == [f"-DHIL_KERNEL_LIST={made.kernel_list}", "-DHIL_SIM_TABLE_SOURCE=none",
                                    "-DHIL_KERNEL_LIBRARIES=none"]
