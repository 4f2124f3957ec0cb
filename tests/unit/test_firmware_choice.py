"""Which QEMU image a run gets when it is asked for, or required, and what it is told when it cannot have it.

Each case is a real board file (the built-in qemu.toml with its one key changed by a two-line file over it)
and a real folder standing for the source workspace; the expected outcome is written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.cli.main import exit_code_for
from hil.config.board_config import load_board_config
from hil.base.errors import EnvironmentFault, InputError
from hil.firmware.qemu_firmware import Requirement, check_elf_kind, choice_record, choose_qemu_firmware
from test_runtime_image import workspace  # noqa: F401  (a folder standing for the source workspace, in RT700_SDK_DIR)

NIGHTLY = Requirement("runtime", "the history's series of cifar10 on qemu is a runtime series")


def _board(tmp_path: Path, firmware: str | None = None, origin: str | None = None):
    """The built-in QEMU board, with `[qemu].firmware` given as the run's override from `origin`."""
    cfg = load_board_config("qemu")
    if firmware is None:
        return cfg
    return cfg.with_overrides({"qemu.firmware": firmware}, {"qemu.firmware": origin} if origin else None)


@pytest.fixture
def no_workspace(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "no-sdk"))
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)
    return tmp_path / "no-sdk"


def test_a_required_runtime_image_without_sources_is_an_environment_fault_naming_the_folder(tmp_path, no_workspace):
    with pytest.raises(EnvironmentFault) as failure:
        choose_qemu_firmware(_board(tmp_path), "none", required=NIGHTLY)
    said = str(failure.value)
    assert exit_code_for(failure.value) == 3
    assert f"no firmware source workspace at {no_workspace}" in said and "`hil sources`" in said
    assert NIGHTLY.reason in said and "replay" not in said
    # Without the requirement the same board replays, and says so once.
    chosen = choose_qemu_firmware(_board(tmp_path), "none")
    assert chosen.kind == "replay" and "uses the replay image (a host-made ETDump)" in chosen.notice


def test_the_runtime_image_asked_for_names_who_asked(tmp_path, no_workspace):
    with pytest.raises(EnvironmentFault) as failure:
        choose_qemu_firmware(_board(tmp_path, "runtime", "environment HIL_FIRMWARE"), "none")
    assert 'qemu.firmware = "runtime" (environment HIL_FIRMWARE)' in str(failure.value)


def test_a_delegate_the_runtime_image_cannot_run_is_the_users_error(tmp_path, workspace):
    for cfg, required in ((_board(tmp_path), NIGHTLY), (_board(tmp_path, "runtime"), None)):
        with pytest.raises(InputError) as failure:
            choose_qemu_firmware(cfg, "neutron", required=required)
        assert exit_code_for(failure.value) == 2
        assert "'neutron' delegate" in str(failure.value) and "--delegate none or neutron-sim or cortex-m" in str(failure.value)
    # Nobody asked: the real-Neutron program replays, with the reason.
    chosen = choose_qemu_firmware(_board(tmp_path), "neutron")
    assert chosen.kind == "replay" and "'neutron' delegate runs on the replay image" in chosen.notice


def test_a_requirement_against_the_setting_is_refused_naming_both(tmp_path, workspace):
    cfg = _board(tmp_path, "replay", "command line --hil-firmware")
    with pytest.raises(InputError) as failure:
        choose_qemu_firmware(cfg, "none", required=NIGHTLY)
    assert str(failure.value) == ("board 'qemu': qemu.firmware = \"replay\" (command line --hil-firmware), but the run "
                                  f"requires the runtime image ({NIGHTLY.reason})")
    # With the sources there, the requirement is met whatever `auto` would do.
    chosen = choose_qemu_firmware(_board(tmp_path), "neutron-sim", required=NIGHTLY)
    assert (chosen.kind, chosen.workspace, chosen.notice) == ("runtime", workspace, None)
    with pytest.raises(InputError, match="crafted replay image"):  # a harness test's crafted ETDump cannot be it
        choose_qemu_firmware(_board(tmp_path), "none", crafted=True, required=NIGHTLY)


def test_the_manifest_records_the_choice_and_where_it_came_from(tmp_path):
    builtin = Path(__file__).resolve().parents[2] / "boards" / "qemu.toml"
    assert choice_record(_board(tmp_path)) == {"setting": "auto", "from": f"board file {builtin}", "required": None}
    assert choice_record(_board(tmp_path, "runtime"), NIGHTLY) == {
        "setting": "runtime", "from": "command line",
        "required": {"kind": "runtime", "reason": NIGHTLY.reason}}


def test_a_users_elf_of_the_other_kind_is_refused(tmp_path):
    elf = tmp_path / "fw.elf"
    check_elf_kind(_board(tmp_path), elf, "replay")  # auto: the ELF is what it is
    with pytest.raises(InputError, match="is a replay image, but the run requires the runtime image"):
        check_elf_kind(_board(tmp_path), elf, "replay", NIGHTLY)
    with pytest.raises(InputError, match=r'is a runtime image, but qemu.firmware = "replay" \(command line\)'):
        check_elf_kind(_board(tmp_path, "replay"), elf, "runtime")


def test_a_cortex_m_program_runs_on_the_runtime_image_only(tmp_path, workspace, monkeypatch):
    """The host runtime that makes a replay image's ETDump has no cortex_m kernels: a Cortex-M program never
    replays; without sources it is the machine's fault (exit 3), a replay asked for is the user's (exit 2)."""
    chosen = choose_qemu_firmware(_board(tmp_path), "cortex-m")
    assert (chosen.kind, chosen.workspace, chosen.notice) == ("runtime", workspace, None)
    with pytest.raises(InputError) as replay:
        choose_qemu_firmware(_board(tmp_path, "replay", "command line --hil-firmware"), "cortex-m")
    assert exit_code_for(replay.value) == 2
    assert str(replay.value) == ("board 'qemu': a program lowered with the 'cortex-m' delegate runs on the runtime "
                                 "image only (the replay image's host runtime has no cortex-m kernels), but "
                                 "qemu.firmware = \"replay\" (command line --hil-firmware)")
    with pytest.raises(InputError, match="crafted replay image"):
        choose_qemu_firmware(_board(tmp_path), "cortex-m", crafted=True)
    monkeypatch.setenv("RT700_SDK_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(EnvironmentFault) as missing:
        choose_qemu_firmware(_board(tmp_path), "cortex-m")
    assert exit_code_for(missing.value) == 3
    assert str(missing.value).startswith("board 'qemu': a program lowered with the 'cortex-m' delegate needs the "
                                         f"runtime image, but there is no firmware source workspace at {tmp_path / 'nowhere'}")
