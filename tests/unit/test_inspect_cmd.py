"""`hil inspect` in-process: which clock a bare dump is read with, and a run folder read back.

Truths: ETDumps decoded by ExecuTorch's own deserializer, and clocks written into the test.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from hil.cli.inspect_cmd import InspectRequest, bare_time_scale, has_neutron_delegate, inspect_files, inspect_run
from hil.analysis.timescale import TimeScale, board_time_scale
from hil.base.errors import AnalysisError

REPO = Path(__file__).resolve().parents[2]


def _args(**given: object) -> InspectRequest:
    base = dict(path=Path("unused"), clock_mhz=None, board_config=None, ns=False, etrecord=None, pte=None, json=True,
                no_verify=False)
    return InspectRequest(**{**base, **given})  # type: ignore[arg-type]


NEUTRON = SimpleNamespace(_delegate_map={"forward": {0: {"name": "NeutronBackend", "delegate_map": {}}}})
XNNPACK = SimpleNamespace(_delegate_map={"forward": {"0": {"name": "XnnpackBackend", "delegate_map": {}}}})
CPU_ONLY = SimpleNamespace(_delegate_map={"forward": {}})


def test_only_neutron_backends_make_a_dump_tick_based():
    assert has_neutron_delegate(NEUTRON) and not has_neutron_delegate(XNNPACK) and not has_neutron_delegate(CPU_ONLY)
    assert not has_neutron_delegate(SimpleNamespace(_delegate_map=None))


def test_bare_dump_clock_comes_only_from_flags():
    assert bare_time_scale(_args(), CPU_ONLY) == (TimeScale(1.0, unit="ticks"), "unknown")
    assert bare_time_scale(_args(ns=True), CPU_ONLY) == (TimeScale(1000.0), "unknown")
    assert bare_time_scale(_args(clock_mhz=200.0), NEUTRON) == (TimeScale(200.0, None, True), "clock")


@pytest.fixture
def no_sources(monkeypatch, tmp_path):
    """No firmware source workspace and no git base to assemble one from (with HIL_GIT_BASE set, as CI sets it,
    `auto` means the runtime image, assembled on demand): the QEMU board file's `auto` means the replay image."""
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "no-workspace"))
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)


def test_a_board_files_clock_applies_to_tick_based_dumps_only(no_sources):
    qemu = REPO / "boards" / "qemu.toml"
    assert bare_time_scale(_args(board_config=qemu), CPU_ONLY) == (TimeScale(1000.0), "qemu")
    assert bare_time_scale(_args(board_config=qemu), XNNPACK) == (TimeScale(1000.0), "qemu")
    assert bare_time_scale(_args(board_config=qemu), NEUTRON) == (TimeScale(324.0, 250.0, True), "qemu")
    rt700 = REPO / "boards" / "rt700.toml"
    assert bare_time_scale(_args(board_config=rt700), CPU_ONLY)[0] == TimeScale(324.0, None, True)


def test_with_sources_a_qemu_board_file_reads_a_bare_dump_as_the_runtime_images_ticks(monkeypatch, tmp_path):
    (tmp_path / "workspace.env").write_text("EXECUTORCH_ROOT=executorch\n")
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path))
    qemu = REPO / "boards" / "qemu.toml"
    # The runtime image's PAL counts a 20 MHz counter; its simulated NPU timer runs at the board file's 250 MHz.
    assert bare_time_scale(_args(board_config=qemu), CPU_ONLY) == (TimeScale(20.0, 250.0, True), "qemu")
    assert board_time_scale("rt700", 100.0, neutron=False) == TimeScale(100.0, None, True)


def test_time_scale_round_trips_through_a_manifest():
    scale = TimeScale(324.0, 250.0, True)
    assert TimeScale.from_dict(json.loads(json.dumps(scale.to_dict()))) == scale
    assert TimeScale.raw_ticks().to_dict() == {"ticks_per_us": 1.0, "neutron_ticks_per_us": 1.0,
                                                "follows_clock": False, "unit": "ticks"}


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A run folder made of the analysis tests' host-runtime program (nanoseconds, 3 runs, 1 warm-up)."""
    import test_analysis
    from programs import cached_folder

    art = cached_folder("analysis", test_analysis.__file__, test_analysis._build)
    folder = tmp_path / "run"
    folder.mkdir()
    for src, dst in (("tiny.etdump", "trace.etdump"), ("tiny.etrecord", "etrecord.bin"), ("tiny.pte", "model.pte")):
        shutil.copyfile(art / src, folder / dst)
    (folder / "manifest.json").write_text(json.dumps({
        "board": "qemu", "model": "tiny", "model_name": "tiny", "delegate": "none", "warmup": 1,
        "time_scale": TimeScale.nanoseconds().to_dict(), "files": listing(folder)}))
    return folder


def listing(folder: Path) -> dict[str, dict[str, object]]:
    """sha256 and size of every file in `folder` but the manifest, computed here with hashlib."""
    return {p.name: {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), "size": p.stat().st_size}
            for p in sorted(folder.iterdir()) if p.is_file() and p.name != "manifest.json"}


def _method_ns(etdump: Path) -> list[int]:
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    dump = deserialize_from_etdump_flatcc(etdump.read_bytes())
    return [e.profile_event.end_time - e.profile_event.start_time for r in dump.run_data for e in r.events
            if e.profile_event and e.profile_event.name == "Method::execute"]


def test_a_run_folder_is_read_with_its_manifests_clock_and_warmup(run_folder: Path):
    profile = inspect_run(run_folder)
    ns = _method_ns(run_folder / "trace.etdump")
    (method,) = [e for e in profile["events"] if e["kind"] == "method"]
    assert method["times_us"] == [round(t / 1000, 3) for t in ns[1:]]
    assert (profile["model"], profile["board"], profile["delegate"], profile["warmup_iterations"]) == (
        "tiny", "qemu", "none", 1)
    assert profile["simulated"] is True and profile["time_unit"] == "us"


def test_a_run_folder_without_a_recorded_clock(run_folder: Path, capsys: pytest.CaptureFixture[str]):
    manifest = json.loads((run_folder / "manifest.json").read_text())
    del manifest["time_scale"]
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    assert inspect_run(run_folder)["time_scale"]["ticks_per_us"] == 1000.0  # a QEMU board's CPU-only run
    manifest["board"] = "rt700"
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(AnalysisError, match="records no clock"):
        inspect_run(run_folder)
    with pytest.raises(AnalysisError, match="no manifest.json"):
        inspect_run(run_folder / "nothing")


def test_inspect_files_prints_ticks_for_a_bare_dump(run_folder: Path, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(AnalysisError, match="--etrecord"):
        inspect_files(_args(path=run_folder / "trace.etdump"))
    assert inspect_files(_args(path=run_folder / "trace.etdump", etrecord=run_folder / "etrecord.bin")) == 0
    profile = json.loads(capsys.readouterr().out)
    (method,) = [e for e in profile["events"] if e["kind"] == "method"]
    assert profile["time_unit"] == "ticks" and method["times_us"] == _method_ns(run_folder / "trace.etdump")
    assert inspect_files(_args(path=run_folder, json=False)) == 0
    assert "times in us" in capsys.readouterr().out


def test_inspect_files_with_a_board_file_and_a_pte(run_folder: Path, capsys: pytest.CaptureFixture[str], no_sources):
    args = _args(path=run_folder / "trace.etdump", etrecord=run_folder / "etrecord.bin",
                 board_config=REPO / "boards" / "qemu.toml", pte=run_folder / "model.pte")
    assert inspect_files(args) == 0
    out = capsys.readouterr().out
    assert out.startswith('{"schema": "et-hil/profile/1", "board": "qemu", ') and out.count("\n") == 1
    profile = json.loads(out)
    assert (profile["board"], profile["model"], profile["simulated"]) == ("qemu", "trace", False)
    assert profile["memory"]["pte"]["file_bytes"] == (run_folder / "model.pte").stat().st_size
    (method,) = [e for e in profile["events"] if e["kind"] == "method"]
    assert method["times_us"] == [round(t / 1000, 3) for t in _method_ns(run_folder / "trace.etdump")]


def test_time_scales_without_every_field_read_back_with_their_defaults():
    ticks = TimeScale.from_dict(TimeScale.raw_ticks().to_dict())
    assert ticks.unit == "ticks" and ticks.to_dict() == TimeScale.raw_ticks().to_dict()
    assert TimeScale.from_dict({"ticks_per_us": 2, "neutron_ticks_per_us": 3}) == TimeScale(2.0, 3.0, False, "us")


def test_a_run_folder_with_its_console_and_a_simulation_but_no_recorded_clock(run_folder: Path):
    manifest = json.loads((run_folder / "manifest.json").read_text())
    for key in ("time_scale", "board", "model_name"):
        del manifest[key]
    manifest["model"] = str(run_folder / "absent.py") + ":factory"
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    (run_folder / "simulation.json").write_text(json.dumps({"clock_mhz": 500, "npu_clock_mhz": 250}))
    (run_folder / "serial.log").write_text("Core/NPU Frequency: 400 MHz\r\nInference time: 7 us\r\n")
    profile = inspect_run(run_folder)
    assert profile["time_scale"] == {"ticks_per_us": 400.0, "neutron_ticks_per_us": 250.0, "follows_clock": True,
                                     "unit": "us"}  # the console's clock wins over simulation.json's, as in a run
    (method,) = [e for e in profile["events"] if e["kind"] == "method"]
    assert method["times_us"] == [round(t / 400, 3) for t in _method_ns(run_folder / "trace.etdump")[1:]]
    assert profile["console"]["inference_times_us"] == [7] and profile["simulated"] is True
    assert profile["model"] == manifest["model"] and profile["memory"]["pte"]["file_bytes"] > 0
    (run_folder / "simulation.json").unlink()
    manifest["model"] = "cifar10"
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(AnalysisError, match="records no clock"):
        inspect_run(run_folder)
    manifest["board"] = "qemu"
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    assert inspect_run(run_folder)["model"] == "cifar10"


def test_the_command_line_takes_one_clock_at_most():
    from hil.cli.main import build_parser

    parser = build_parser()
    args = parser.parse_args(["inspect", "d.etdump", "--etrecord", "r.bin", "--clock-mhz", "200", "--json"])
    assert (args.path, args.etrecord, args.clock_mhz, args.ns, args.board_config, args.pte, args.json) == (
        Path("d.etdump"), Path("r.bin"), 200.0, False, None, None, True)
    assert parser.parse_args(["inspect", "run"]).etrecord is None
    with pytest.raises(SystemExit):
        parser.parse_args(["inspect", "d", "--ns", "--clock-mhz", "1"])


def test_the_manifests_clock_name_and_board_win(run_folder: Path):
    manifest = json.loads((run_folder / "manifest.json").read_text())
    manifest.update(time_scale=TimeScale(2000.0).to_dict(), model="elsewhere/net.py:factory", model_name="net",
                    board="rt700")
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    (run_folder / "serial.log").write_bytes(b"\xff\xfe garbage\r\nInference time: 9 us\r\n")
    (run_folder / "model.pte").unlink()
    profile = inspect_run(run_folder)
    (method,) = [e for e in profile["events"] if e["kind"] == "method"]
    assert method["times_us"] == [round(t / 2000, 3) for t in _method_ns(run_folder / "trace.etdump")[1:]]
    assert (profile["model"], profile["board"], profile["simulated"]) == ("net", "rt700", False)
    assert profile["console"]["inference_times_us"] == [9] and "pte" not in profile["memory"]


def _my_bench(tmp_path: Path) -> Path:
    """A user's own board file of kind rt700 under another name (the README's `my_bench`)."""
    text = (REPO / "boards" / "rt700.toml").read_text().replace('name = "rt700"', 'name = "my_bench"', 1)
    path = tmp_path / "my_bench.toml"
    path.write_text(text)
    return path


def test_inspect_of_a_session_run_on_an_rt700_kind_board_file_says_not_simulated(run_folder, tmp_path, capsys):
    """The `hil_board` session's finish (hil.run.folder.finish_session), then `hil inspect RUN_DIR --json`."""
    from hil.analysis.profile import build_profile
    from hil.config.board_config import load_board_config
    from hil.records.manifest import is_simulated
    from hil.run.folder import RunFolder, finish_profile, finish_session

    cfg = load_board_config(path=_my_bench(tmp_path))
    assert (cfg.name, cfg.kind) == ("my_bench", "rt700")
    (run_folder / "manifest.json").unlink()
    scale = TimeScale.nanoseconds()
    built = build_profile(run_folder / "trace.etdump", run_folder / "etrecord.bin", board=cfg.name, model="tiny",
                          simulated=is_simulated(cfg.kind), time_scale=scale)
    finish_session(RunFolder(run_folder), cfg, finish_profile(built), run_folder / "model.pte", scale)
    manifest = json.loads((run_folder / "manifest.json").read_text())
    assert (manifest["board"], manifest["board_kind"], manifest["simulated"]) == ("my_bench", "rt700", False)
    assert inspect_files(_args(path=run_folder)) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["board"], printed["simulated"]) == ("my_bench", False)
    # A manifest (an older one: no digest of its own) that records the board's kind but not `simulated`: the
    # kind decides, not the name.
    del manifest["simulated"], manifest["manifest_sha256"]
    manifest["schema"] = "et-hil/manifest/1"
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    assert inspect_run(run_folder)["simulated"] is False
    manifest["board_kind"] = "qemu"
    (run_folder / "manifest.json").write_text(json.dumps(manifest))
    assert inspect_run(run_folder)["simulated"] is True
