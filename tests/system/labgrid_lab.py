"""A real labgrid lab on loopback for the system tests: coordinator, exporter and ser2net, nothing faked.

Each place gets a console: ser2net serves a path (a symlink the QEMU board points at its `-serial pty`)
as RFC2217 on 127.0.0.1, and the exporter publishes that as the place's `NetworkSerialPort`. Ports are
chosen free; every process is a ManagedProcess (own process group, stopped by `close()`), started with
`HIL_SESSION_TAG` in its environment so a test can prove none is left. Only loopback is ever contacted:
the processes get `no_proxy` for it and no proxy variables (gRPC would otherwise honour them).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from hil.lab.labgrid_cli import LabgridClient, labgrid_bin
from hil.base.errors import TimeoutExpired
from hil.probe.gdbserver import _listening_ports
from hil.target.ports import LOOPBACK, free_tcp_port
from hil.target.process import ManagedProcess

START_TIMEOUT_S = 30.0
PROXY_VARIABLES = ("http_proxy", "https_proxy", "grpc_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def wait_listening(port: int, process: ManagedProcess) -> None:
    """Until `port` listens (IPv4 or IPv6 table: gRPC may bind a v4-mapped socket), or the process ends."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while port not in (_listening_ports() or set()):
        if not process.alive or time.monotonic() > deadline:
            raise TimeoutExpired(f"{process.name} is not listening on {LOOPBACK}:{port} (log: {process.log_path})")
        time.sleep(0.05)


def loopback_env(**extra: str) -> dict[str, str]:
    """The environment for lab processes and clients: no proxy, loopback exempt from any."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES}
    env.update(no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost", **extra)
    return env


class LocalLab:
    """`places` -> console link path; `start()` brings the lab up, `close()` takes every process down."""

    def __init__(self, root: Path, places: list[str], *, tag: str, pyocd_servers: dict[str, int] | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.places = list(places)
        self.tag = tag
        self.exporter_name = "hil-test-exporter"
        self.coordinator = ""
        self.console_links = {place: self.root / f"console-{place}" for place in places}
        self.ser2net_ports: dict[str, int] = {}
        self.processes: list[ManagedProcess] = []
        # place -> port of a `pyocd server` on this host, exported as the place's NetworkService "pyocd"
        self.pyocd_servers = dict(pyocd_servers or {})

    def _start(self, argv: list[str], name: str, cwd: Path | None = None) -> ManagedProcess:
        if cwd is not None:  # the coordinator keeps its places.yaml in its working folder
            argv = ["/usr/bin/env", "-C", str(cwd), *argv]
        process = ManagedProcess(argv, name, self.root / f"{name}.log", env=loopback_env(HIL_SESSION_TAG=self.tag))
        self.processes.append(process.start())
        return process

    def start(self) -> "LocalLab":
        try:
            self._start_coordinator()
            self._start_ser2net()
            self._start_exporter()
            self._create_places()
        except BaseException:
            self.close()
            raise
        return self

    def _start_coordinator(self) -> None:
        port = free_tcp_port()
        self.coordinator = f"{LOOPBACK}:{port}"
        state = self.root / "coordinator"
        state.mkdir(exist_ok=True)
        process = self._start([str(labgrid_bin("labgrid-coordinator")), "-l", self.coordinator],
                              "labgrid-coordinator", cwd=state)
        wait_listening(port, process)

    def _start_ser2net(self) -> None:
        """One ser2net with a connection per place, from an explicit YAML file, bound to 127.0.0.1 only."""
        lines = []
        for i, place in enumerate(self.places):
            port = self.ser2net_ports[place] = free_tcp_port()
            lines += [
                f"connection: &console{i}",
                f"  accepter: telnet(rfc2217,mode=server),tcp,{LOOPBACK},{port}",
                f"  connector: serialdev(nouucplock=true),{self.console_links[place]},115200n81,local",
                "  options:",
                "    max-connections: 1",
                "",
            ]
        config = self.root / "ser2net.yaml"
        config.write_text("\n".join(lines))
        process = self._start(["/usr/sbin/ser2net", "-n", "-d", "-c", str(config), "-P", str(self.root / "ser2net.pid")],
                              "ser2net")
        for port in self.ser2net_ports.values():
            wait_listening(port, process)

    def _start_exporter(self) -> None:
        groups = []
        for place in self.places:
            groups += [f"{place}:", "  NetworkSerialPort:", f"    host: {LOOPBACK}",
                       f"    port: {self.ser2net_ports[place]}", "    speed: 115200", "    protocol: rfc2217"]
            if place in self.pyocd_servers:
                groups += ["  pyocd:", "    cls: NetworkService", f"    address: {LOOPBACK}",
                           f"    port: {self.pyocd_servers[place]}", "    username: pyocd"]
        config = self.root / "exporter.yaml"
        config.write_text("\n".join(groups) + "\n")
        self._start([str(labgrid_bin("labgrid-exporter")), "-c", self.coordinator, "--name", self.exporter_name,
                     "--hostname", LOOPBACK, str(config)], "labgrid-exporter")
        client = self.client()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # the exporter registers its resources asynchronously
            listing = client.run("resources").stdout
            if all(f"{self.exporter_name}/{place}/NetworkSerialPort" in listing for place in self.places):
                return
            assert time.monotonic() < deadline, f"exporter never registered its resources: {listing!r}"
            time.sleep(0.2)

    def _create_places(self) -> None:
        client = self.client()
        for place in self.places:
            client.run("-p", place, "create")
            client.run("-p", place, "add-match", f"{self.exporter_name}/{place}/*")

    def client(self, user: str = "hil-test-admin") -> LabgridClient:
        os.environ.setdefault("no_proxy", "127.0.0.1,localhost")
        return LabgridClient(self.coordinator, user=user)

    def listening_addresses(self) -> list[str]:
        """Every listening socket of the lab's ports as /proc/net/tcp shows it (hex address:port)."""
        ports = {int(self.coordinator.rsplit(":", 1)[1]), *self.ser2net_ports.values()}
        found = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) in ports:
                    found.append(fields[1])
        return found

    def close(self) -> None:
        for process in reversed(self.processes):
            process.close()
        assert not self.listening_addresses(), "a lab port still listens after close()"
