"""`hil sources` (hil.firmware.sources_cmd over hil.firmware.workspace) against real git repositories made in tmp_path.

Every expected commit comes from `git rev-parse` in the source repositories made here, and every
expected file from what the test committed, never from the code under test.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from hil.firmware import workspace
from hil.firmware.git_cmd import GitTimeout, run
from hil.cli.main import main as hil_main


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git config, fixed identities and dates, no HIL_GIT_BASE from the caller."""
    (tmp_path / "gitconfig").write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "t")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "t@example.com")
        monkeypatch.setenv(f"GIT_{role}_DATE", "2025-01-01T00:00:00Z")
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)
    monkeypatch.setenv("HIL_CACHE_DIR", str(tmp_path / "cache"))


def sh_git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(where: Path, commits: list[dict[str, str]], gitlinks: dict[str, str] | None = None) -> list[str]:
    """A work repository with one commit per dict of {path: content}; returns the shas, oldest first."""
    where.mkdir(parents=True)
    sh_git(where, "init", "-q", "-b", "main")
    shas = []
    for number, files in enumerate(commits):
        for rel, text in files.items():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            (where / rel).write_text(text)
        sh_git(where, "add", "-A")
        for path, sha in (gitlinks or {}).items():  # a submodule entry, as ExecuTorch records flatcc
            sh_git(where, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
        sh_git(where, "commit", "-q", "-m", f"commit {number}")
        shas.append(sh_git(where, "rev-parse", "HEAD"))
    return shas


def write_pins(path: Path, pins: list[dict[str, object]], env: dict[str, str] | None = None) -> Path:
    def value(v: object) -> str:
        return "[" + ", ".join(f'"{x}"' for x in v) + "]" if isinstance(v, list) else f'"{v}"'
    text = ""
    if env:
        text += "[env]\n" + "".join(f'{k} = "{v}"\n' for k, v in env.items())
    for pin in pins:
        text += "\n[[pin]]\n" + "".join(f"{k} = {value(v)}\n" for k, v in pin.items())
    path.write_text(text)
    return path


@pytest.fixture
def lab(tmp_path: Path) -> dict[str, object]:
    """A base folder in all three layouts: acme/parent (work repo with .git), acme/child.git (bare),
    acme/tools (a symlink to a bare repository elsewhere); child sits in parent's submodule path."""
    src = tmp_path / "src"
    child = make_repo(src / "child", [{"child.txt": "child v1\n"}, {"child.txt": "child v2\n"}])
    parent = make_repo(src / "parent", [{"top.txt": "parent v1\n", "keep/a.txt": "a\n", "drop/b.txt": "b\n"},
                                        {"top.txt": "parent v2\n"}], gitlinks={"third-party/child": child[1]})
    tools = make_repo(src / "tools", [{"tool.txt": "tool v1\n"}])
    base = tmp_path / "base"
    (base / "acme").mkdir(parents=True)
    os.rename(src / "parent", base / "acme" / "parent")
    sh_git(tmp_path, "clone", "-q", "--bare", str(src / "child"), str(base / "acme" / "child.git"))
    sh_git(tmp_path, "clone", "-q", "--bare", str(src / "tools"), str(tmp_path / "elsewhere" / "tools"))
    (base / "acme" / "tools").symlink_to(tmp_path / "elsewhere" / "tools")
    pins = [  # child first: the assembler must reorder
        {"repo": "acme/child", "path": "parent/third-party/child", "commit": child[0], "bench_commit": child[1]},
        {"repo": "acme/parent", "path": "parent", "commit": parent[0]},
        {"repo": "acme/tools", "path": "tools", "commit": tools[0]},
    ]
    return {"base": base, "child": child, "parent": parent, "tools": tools, "pins": pins,
            "file": write_pins(tmp_path / "pins.toml", pins, env={"PARENT_ROOT": "parent", "CHILD_DIR": "parent/third-party/child"}),
            "dest": tmp_path / "ws"}


def assemble(lab: dict[str, object], *extra: str, base: object = None, pins: object = None) -> int:
    return hil_main(["sources", "--pins", str(pins or lab["file"]), "--dest", str(lab["dest"]),
                 "--git-base", str(base or lab["base"]), *extra])


def test_local_base_checks_out_each_pin_at_its_commit_parents_first(lab, capsys):
    assert assemble(lab) == 0
    out = capsys.readouterr().out
    ws: Path = lab["dest"]
    assert sh_git(ws / "parent", "rev-parse", "HEAD") == lab["parent"][0]
    assert sh_git(ws / "parent/third-party/child", "rev-parse", "HEAD") == lab["child"][0]
    assert sh_git(ws / "tools", "rev-parse", "HEAD") == lab["tools"][0]  # through the symlink
    assert (ws / "parent/top.txt").read_text() == "parent v1\n"
    assert (ws / "parent/third-party/child/child.txt").read_text() == "child v1\n"
    assert (ws / "tools/tool.txt").read_text() == "tool v1\n"
    # Parent before child: in the report, and on disk (HEAD is written by each checkout).
    assert out.index("acme/parent") < out.index("acme/child")
    assert (ws / "parent/.git/HEAD").stat().st_mtime_ns <= (ws / "parent/third-party/child/.git/HEAD").stat().st_mtime_ns
    env_file = (ws / "workspace.env").read_text()
    assert f"export PARENT_ROOT={ws}/parent\n" in env_file
    assert f"export CHILD_DIR={ws}/parent/third-party/child\n" in env_file
    assert f"PARENT_ROOT={ws}/parent" in out
    # The lab's mirrors are only read: nothing was written into them.
    assert not (lab["base"] / "acme/child.git/objects/info/alternates").exists()


def test_sparse_patterns_leave_out_the_rest_and_dropping_them_brings_it_back(lab, tmp_path):
    pins = [dict(lab["pins"][1], sparse=["/*", "!/drop/"])]
    assert assemble(lab, pins=write_pins(tmp_path / "sparse.toml", pins)) == 0
    parent = lab["dest"] / "parent"
    assert (parent / "keep/a.txt").read_text() == "a\n"
    assert not (parent / "drop").exists()
    assert sh_git(parent, "rev-parse", "HEAD") == lab["parent"][0]
    assert assemble(lab, pins=write_pins(tmp_path / "full.toml", [lab["pins"][1]])) == 0
    assert (parent / "drop/b.txt").read_text() == "b\n"


def test_second_run_is_up_to_date_without_touching_the_source(lab, tmp_path, capsys):
    assert assemble(lab) == 0
    head = lab["dest"] / "parent/.git/HEAD"
    before = head.stat().st_mtime_ns
    capsys.readouterr()
    empty = tmp_path / "empty-base"  # the repositories are gone: only the stamps can answer
    empty.mkdir()
    started = time.monotonic()
    assert assemble(lab, base=empty) == 0
    assert time.monotonic() - started < 2
    assert "up to date" in capsys.readouterr().out
    assert head.stat().st_mtime_ns == before


def test_a_checkout_moved_away_from_its_pin_is_put_back(lab, capsys):
    assert assemble(lab) == 0
    parent = lab["dest"] / "parent"
    sh_git(parent, "checkout", "-q", "--detach", lab["parent"][1])  # the stamp still says commit 0
    assert assemble(lab) == 0
    assert "up to date" not in capsys.readouterr().out
    assert sh_git(parent, "rev-parse", "HEAD") == lab["parent"][0]


def test_bench_commits_take_bench_commit_where_there_is_one(lab):
    assert assemble(lab) == 0
    assert assemble(lab, "--bench-commits") == 0
    assert sh_git(lab["dest"] / "parent/third-party/child", "rev-parse", "HEAD") == lab["child"][1]
    assert sh_git(lab["dest"] / "parent", "rev-parse", "HEAD") == lab["parent"][0]  # has no bench_commit
    assert (lab["dest"] / "parent/third-party/child/child.txt").read_text() == "child v2\n"


def test_url_base_fetches_by_id_and_accepts_the_dot_git_form(lab, tmp_path, monkeypatch):
    pins = write_pins(tmp_path / "url.toml", lab["pins"][:1])  # acme/child.git only in the base
    assert assemble(lab, base=f"file://{lab['base']}", pins=pins) == 0
    child = lab["dest"] / "parent/third-party/child"
    assert sh_git(child, "rev-parse", "HEAD") == lab["child"][0]
    assert not (lab["base"] / "acme/child").exists()  # only the `.git` form is there
    # Protocol v0 refuses a commit that is no branch tip by id: the full fetch must find it.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")
    lab["dest"] = tmp_path / "ws-v0"
    assert assemble(lab, base=f"file://{lab['base']}", pins=pins) == 0
    assert sh_git(lab["dest"] / "parent/third-party/child", "rev-parse", "HEAD") == lab["child"][0]


@pytest.mark.parametrize("kind", ["folder", "url"])
def test_missing_repository_names_the_repository_and_the_base(lab, tmp_path, capsys, kind):
    pins = write_pins(tmp_path / "nothere.toml", [{"repo": "acme/nothere", "path": "x", "commit": "a" * 40}])
    base = lab["base"] if kind == "folder" else f"file://{lab['base']}"
    assert assemble(lab, base=base, pins=pins) == 3
    err = capsys.readouterr().err
    assert "acme/nothere: no repository at " in err and f"{lab['base']}/acme/nothere" in err


@pytest.mark.parametrize("kind", ["folder", "url"])
def test_unknown_commit_names_the_repository_and_the_commit(lab, tmp_path, capsys, kind):
    pins = write_pins(tmp_path / "badsha.toml", [dict(lab["pins"][2], commit="0123456789" * 4)])
    base = lab["base"] if kind == "folder" else f"file://{lab['base']}"
    assert assemble(lab, base=base, pins=pins) == 3
    err = capsys.readouterr().err
    assert "acme/tools: commit 0123456789012345678901234567890123456789 not found in " in err
    assert str(lab["base"] / "acme/tools") in err
    assert "badsha.toml" in err


@pytest.mark.parametrize("body, key", [
    ('[[pin]]\nrepo = "acme/tools"\npath = "tools"\n', "'commit'"),
    ('[[pin]]\nrepo = "acme/tools"\npath = "tools"\ncommit = "4e24c992"\n', "'commit'"),
    ('[[pin]]\nrepo = "acme/tools"\npath = "tools"\ncommit = "' + "a" * 40 + '"\nbench_commit = "xyz"\n', "'bench_commit'"),
    ('[[pin]]\nrepo = "tools"\npath = "tools"\ncommit = "' + "a" * 40 + '"\n', "'repo'"),
    ('[[pin]]\nrepo = "acme/tools"\npath = "../up"\ncommit = "' + "a" * 40 + '"\n', "'path'"),
    ('[[pin]]\nrepo = "acme/tools"\npath = "t"\ncommit = "' + "a" * 40 + '"\nsparse = "/x/"\n', "'sparse'"),
    ('[[pin]]\nrepo = "acme/tools"\npath = "t"\ncommit = "' + "a" * 40 + '"\nbench-commit = "x"\n', "'bench-commit'"),
    ('[[pin]\nrepo = ', "TOML"),
])
def test_bad_pins_file_names_the_file_and_the_key(lab, tmp_path, capsys, body, key):
    (tmp_path / "broken-pins.toml").write_text(body)
    assert assemble(lab, pins=tmp_path / "broken-pins.toml") == 2
    err = capsys.readouterr().err
    assert "broken-pins.toml" in err and key in err
    assert not lab["dest"].exists()


def _mirror_without_blob(tmp_path: Path) -> tuple[Path, str, str]:
    """A bare mirror of a repo whose big.bin blob is gone, as in the lab's snapshots."""
    (sha,) = make_repo(tmp_path / "src/big", [{"small.txt": "s\n", "data/big.bin": "pretend 4 MiB\n"}])
    blob = sh_git(tmp_path / "src/big", "rev-parse", "HEAD:data/big.bin")
    mirror = tmp_path / "mirror/acme/big.git"
    sh_git(tmp_path, "clone", "-q", "--bare", "--no-hardlinks", str(tmp_path / "src/big"), str(mirror))
    (mirror / "objects" / blob[:2] / blob[2:]).unlink()
    return tmp_path / "mirror", sha, blob


def test_missing_blobs_are_a_warning_naming_the_files_once_per_run(lab, tmp_path, capsys):
    base, sha, _blob = _mirror_without_blob(tmp_path)
    pins = write_pins(tmp_path / "big.toml", [{"repo": "acme/big", "path": "big", "commit": sha}])
    for _run in range(2):  # checked out, then up to date: both say it
        assert assemble(lab, base=base, pins=pins) == 0
        err = capsys.readouterr().err
        assert err.count(f"warning: acme/big {sha[:12]}: 1 file(s) not checked out") == 1 and "data/big.bin" in err
    assert (lab["dest"] / "big/small.txt").read_text() == "s\n"
    assert not (lab["dest"] / "big/data/big.bin").exists()
    assert sh_git(lab["dest"] / "big", "rev-parse", "HEAD") == sha
    sparse = write_pins(tmp_path / "big-sparse.toml",
                        [{"repo": "acme/big", "path": "big", "commit": sha, "sparse": ["/*", "!/data/"]}])
    assert assemble(lab, base=base, pins=sparse) == 0
    assert "warning" not in capsys.readouterr().err


def _dead(pid: int) -> bool:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_a_server_that_never_answers_is_killed_at_the_timeout(lab, tmp_path, capsys, monkeypatch):
    pidfile = tmp_path / "ssh.pid"
    monkeypatch.setenv("GIT_SSH_VARIANT", "ssh")
    monkeypatch.setenv("GIT_SSH_COMMAND", f"sh -c 'echo $$ > {pidfile}; exec sleep 60'")
    started = time.monotonic()
    assert assemble(lab, "--fetch-timeout", "1", base="ssh://git.example.invalid/srv") == 3
    assert time.monotonic() - started < 8
    err = capsys.readouterr().err
    assert "did not finish in 1 s" in err and "acme/" in err and "ssh://git.example.invalid/srv" in err
    assert _dead(int(pidfile.read_text()))


def test_runner_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "sleep.pid"
    with pytest.raises(GitTimeout, match="did not finish in 0.5 s"):
        run(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], timeout=0.5)
    assert _dead(int(pidfile.read_text()))


def test_default_workspace_is_in_the_harness_cache(tmp_path):
    assert workspace.default_dest() == tmp_path / "cache" / "rt700-sdk"


REPO = Path(__file__).resolve().parents[2]


def _make(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


def test_make_rt700_sdk_runs_hil_sources(lab):
    """firmware/rt700/rt700.mk alone (as a wheel user's copy is used; the top Makefile would set up the venv)."""
    import sys

    args = f"--pins {lab['file']} --git-base {lab['base']}"
    done = _make("-f", "firmware/rt700/rt700.mk", "rt700-sdk", f"PYTHON={sys.executable}",
                 f"RT700_SDK_DIR={lab['dest']}", f"RT700_SDK_ARGS={args}", env={})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"-m hil.cli.main sources --dest {lab['dest']}" in done.stdout
    assert f"hil sources: workspace {lab['dest']} is ready (3 repositories" in done.stdout
    assert sh_git(lab["dest"] / "tools", "rev-parse", "HEAD") == lab["tools"][0]
    empty = lab["dest"].parent / "empty-mirror"
    empty.mkdir()
    failed = _make("-f", "firmware/rt700/rt700.mk", "rt700-sdk", f"PYTHON={sys.executable}",
                   f"RT700_SDK_DIR={lab['dest'].parent / 'other'}", f"RT700_SDK_ARGS=--pins {lab['file']}",
                   env={"HIL_GIT_BASE": str(empty)})
    said = [line for line in failed.stderr.splitlines() if line.startswith("hil sources:")]
    assert failed.returncode != 0 and len(said) == 1, failed.stderr
    assert said[0].startswith(f"hil sources: the pinned firmware sources could not be had from {empty}: acme/")


def test_make_sources_runs_hil_sources(tmp_path):
    """The top Makefile's `sources`, read with `make -n` (it would set up the venv first if run)."""
    done = _make("-n", "sources", f"VENV={tmp_path / 'venv'}", f"HIL_SOURCES={tmp_path / 'ws'}", env={})
    assert done.returncode == 0, done.stderr
    assert f"{tmp_path / 'venv'}/bin/python -m hil.cli.main sources --optional -q --dest {tmp_path / 'ws'}" in done.stdout


def test_optional_without_a_git_base_is_one_line_and_exit_0_when_the_sources_cannot_be_had(lab, tmp_path, capsys,
                                                                                          monkeypatch):
    """`make demo` / `make test`: a machine without the public host (or a pin it lacks) goes on with the replay image."""
    monkeypatch.delenv("HIL_GIT_BASE", raising=False)
    pins = write_pins(tmp_path / "nothere.toml", [{"repo": "acme/et-hil-no-such-repository", "path": "x",
                                                   "commit": "a" * 40}])
    code = hil_main(["sources", "--optional", "--probe-timeout", "3", "--pins", str(pins), "--dest", str(lab["dest"])])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 0 and len(err) == 1, err
    assert err[0].startswith("hil sources: the pinned firmware sources could not be had from https://github.com (")
    assert 'firmware = "auto" runs the replay image' in err[0] and "`hil sources`" in err[0]
    # A finished workspace is only checked again, without the network.
    assert assemble(lab) == 0
    capsys.readouterr()
    code = hil_main(["sources", "--optional", "--pins", str(lab["file"]), "--dest", str(lab["dest"])])
    assert code == 0 and f"workspace {lab['dest']} is up to date" in capsys.readouterr().out
