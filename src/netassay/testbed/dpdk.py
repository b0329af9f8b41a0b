"""DPDK's testpmd and l3fwd as the SUT (``--sut testpmd | l3fwd``; see
``testbed.dataplane``).

Debian's DPDK 22.11 (``dpdk``, ``librte-net-af-xdp23``) runs without hugepages or PCI
devices: ``--no-huge -m 512 --no-pci``, its runtime files under ``--file-prefix
netassay-<testbed>`` (``/var/run/dpdk/netassay-<testbed>/``, removed when the testbed
goes down), its two ports virtual devices on the SUT's veths: ``net_af_xdp`` (the
default: an XDP program on each veth hands frames to an AF_XDP socket) or
``net_af_packet`` (``--dpdk-vdev af_packet``: packet sockets; the kernel's own copy of
each frame is then dropped at the veths' ingress by an nft rule, so that the kernel
neither forwards nor counts it as its loss). Its lcores are on the SUT's CPU
(``--lcores 0@CPU,1@CPU``): testpmd's main lcore waits for its standard input there while
its forwarding lcore busy-polls both ports; l3fwd's one lcore forwards.

- testpmd (``dpdk-testpmd``) forwards ``--testpmd-fwd io`` (frames sent on as they came:
  the generator addresses them to the sink's MAC, as across a bridge) or ``mac`` (their
  MACs rewritten to the port's own and the next hop's, ``--eth-peer``), with
  ``--total-num-mbufs=16384`` (without it the mbuf pool does not fit in 512 MB). It
  exits when its standard input closes: it is given a pipe whose write end it holds
  itself, so it runs until it is signalled.
- l3fwd (CSIT's ip4base SUT) is built by ``make setup`` from Debian's ``dpdk-doc``
  example sources with one patch (``dpdk/l3fwd-af-xdp.patch``: it asks for the receive
  offloads the port has, none on af_xdp or af_packet) and installed as
  ``netassay-l3fwd``. Its LPM table holds the testbed's two prefixes (route files
  ``--rule_ipv4`` and ``--rule_ipv6`` in the run directory), its next hops' MACs are
  static (``--eth-dest``), and it lowers the TTL (RFC 1812).

Before and after every trial netassay reads both ports' statistics through DPDK's
telemetry socket (``/ethdev/stats``, the counters testpmd's ``show port stats`` prints).
``imissed`` of an af_xdp port are the kernel's too (the veth counts a frame its XDP
program could not hand to the full socket); ``oerrors`` (frames the transmit ring
could not take) and, over af_packet, ``imissed`` (the packet socket's ring full) are
drops only DPDK sees. A frame the application itself drops (testpmd's or l3fwd's own
``TX-dropped``) is counted nowhere netassay can read: it is loss no counter explains.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from netassay import names
from netassay.config import TestbedConfig
from netassay.errors import TestbedError, ToolError
from netassay.proc import run
from netassay.testbed.dataplane import PRIORITY, XSK_RING, Site, need_program

TESTPMD = "dpdk-testpmd"
L3FWD = "netassay-l3fwd"
RUNTIME = Path("/var/run/dpdk")
TELEMETRY = "dpdk_telemetry.v2"
PMDS = Path("/usr/lib/x86_64-linux-gnu/dpdk")  # Debian's driver directory (pmds-23)
MEMORY_MB = 512
MBUFS = 16384
START_S = 30.0
LOG = "dpdk.log"
PIDFILE = "dpdk.pid"
INSTALL = "install Debian's dpdk-dev (apt-get install dpdk-dev) or run 'make setup'"
BUILD = "run 'make setup' (it builds l3fwd from dpdk-doc's examples with dpdk-dev)"
DRIVERS = {"af_xdp": "librte-net-af-xdp23", "af_packet": "librte-net-af-packet23"}
_KERNEL_COPY = "na_dpdk"  # the nft table dropping the kernel's copy under af_packet
_STARTED: dict[int, subprocess.Popen[bytes]] = {}  # as this process started them


def prefix(name: str) -> str:
    """The testbed's DPDK file prefix (its runtime directory's name)."""
    return f"netassay-{names.validate_name(name)}"


def l3fwd_candidates() -> list[Path]:
    """Where the built l3fwd is looked for: the venv's bin (``make setup`` installs it
    there), then the repository's dpdk/build."""
    return [Path(sys.prefix) / "bin" / L3FWD, Path(__file__).resolve().parents[3] / "dpdk" /
            "build" / L3FWD]  # fmt: skip


def l3fwd_path() -> Path:
    for p in l3fwd_candidates():
        if p.is_file() and os.access(p, os.X_OK):
            return p
    raise ToolError(
        "l3fwd is not built",
        f"no {L3FWD} in {', '.join(str(p.parent) for p in l3fwd_candidates())}",
        BUILD,
    )


def _driver(vdev: str) -> str:
    return "net_af_xdp" if vdev == "af_xdp" else "net_af_packet"


def validate(cfg: TestbedConfig) -> None:
    """The programs and the driver are installed; a cap is not given with a mix."""
    if cfg.sut == "testpmd":
        need_program(TESTPMD, "DPDK's testpmd", INSTALL)
    else:
        l3fwd_path()
    vdev = cfg.dpdk_vdev or "af_xdp"
    lib = "librte_net_af_xdp.so" if vdev == "af_xdp" else "librte_net_af_packet.so"
    if not any(PMDS.glob(f"pmds-*/{lib}*")) and not any(PMDS.parent.glob(f"{lib}*")):
        pkg = DRIVERS[vdev]
        raise ToolError(
            f"DPDK's {_driver(vdev)} driver is not installed", f"no {lib}",
            f"install Debian's {pkg} (apt-get install {pkg}) or run 'make setup'",
        )  # fmt: skip


def uses_af_xdp(cfg: TestbedConfig) -> bool:
    return (cfg.dpdk_vdev or "af_xdp") == "af_xdp"


# -- the command lines (pure) ---------------------------------------------------------------
def vdev_args(vdev: str) -> list[str]:
    """The two ports as DPDK virtual devices on the SUT's veths."""
    out = []
    for i, dev in enumerate((names.SUT_IN, names.SUT_OUT)):
        if vdev == "af_xdp":
            spec = f"net_af_xdp{i},iface={dev},start_queue=0,queue_count=1"
        else:
            spec = f"net_af_packet{i},iface={dev},qpairs=1"
        out += ["--vdev", spec]
    return out


def eal_args(name: str, cpu: int | None, vdev: str, lcores: int) -> list[str]:
    """EAL's arguments: no hugepages, no PCI, the testbed's file prefix, ``lcores``
    lcores all on ``cpu`` (None: on every CPU), the two ports."""
    where = str(cpu) if cpu is not None else f"(0-{(os.cpu_count() or 1) - 1})"
    mapping = ",".join(f"{i}@{where}" for i in range(lcores))
    return ["--no-huge", "-m", str(MEMORY_MB), "--no-pci", "--file-prefix", prefix(name),
            "--lcores", mapping, *vdev_args(vdev)]  # fmt: skip


def testpmd_argv(name: str, cfg: TestbedConfig, cpu: int | None, macs: dict[str, str]) -> list[str]:
    """testpmd: lcore 0 its main (waiting on its standard input), lcore 1 forwarding."""
    fwd = str(cfg.testpmd_fwd or "io")
    peers = [f"--eth-peer=0,{macs[names.TG_DEV]}", f"--eth-peer=1,{macs[names.SINK_DEV]}"]
    return [
        TESTPMD, *eal_args(name, cpu, str(cfg.dpdk_vdev or "af_xdp"), 2), "--",
        f"--forward-mode={fwd}", "--auto-start", f"--total-num-mbufs={MBUFS}",
        "--nb-cores=1", "--rxq=1", "--txq=1", *(peers if fwd == "mac" else []),
    ]  # fmt: skip


def routes(a: names.Addressing) -> tuple[str, str]:
    """l3fwd's route files (IPv4, IPv6): the generator's prefix to port 0, the sink's to
    port 1; the other family's file holds the same for the other addressing."""
    v4 = names.addressing("router", 4)
    v6 = names.addressing("router", 6)

    def lines(x: names.Addressing) -> str:
        return "".join(
            f"R{ipaddress.ip_network(f'{addr}/{x.prefix_len}', strict=False)} {port}\n"
            for addr, port in ((x.tg, 0), (x.sink, 1))
        )

    return lines(v4 if a.ip_version == 6 else a), lines(v6 if a.ip_version == 4 else a)


def l3fwd_argv(
    name: str, cfg: TestbedConfig, cpu: int | None, macs: dict[str, str], files: tuple[Path, Path]
) -> list[str]:
    """l3fwd: one lcore forwarding both ports by LPM, static next hops. Over af_xdp its
    queues are the AF_XDP socket's default ring (``dataplane.XSK_RING``, what testpmd
    gets from the driver): l3fwd's own default of 1024 descriptors would make its
    receive ring half the one the testbed records, and a stall of its CPU half as long
    would overflow it."""
    vdev = str(cfg.dpdk_vdev or "af_xdp")
    ring = str(XSK_RING)
    sizes = ["--rx-queue-size", ring, "--tx-queue-size", ring] if vdev == "af_xdp" else []
    return [
        str(l3fwd_path()), *eal_args(name, cpu, vdev, 1), "--",
        "-p", "0x3", "--config=(0,0,0),(1,0,0)", "--parse-ptype", "--lookup=lpm",
        f"--rule_ipv4={files[0]}", f"--rule_ipv6={files[1]}",
        f"--eth-dest=0,{macs[names.TG_DEV]}", f"--eth-dest=1,{macs[names.SINK_DEV]}", *sizes,
    ]  # fmt: skip


# -- the lifecycle ----------------------------------------------------------------------------
def start(site: Site) -> dict[str, Any]:
    """Start testpmd or l3fwd in the SUT's namespace and wait until it forwards on both
    ports; return what the testbed's state records."""
    cfg, rd, sut = site.cfg, site.run_dir, str(site.cfg.sut)
    vdev = str(cfg.dpdk_vdev or "af_xdp")
    clear_runtime(site.name)
    if vdev == "af_packet":
        _drop_kernel_copy(site.ns["sut"])
    if sut == "testpmd":
        argv = testpmd_argv(site.name, cfg, site.sut_cpu, site.macs)
    else:
        v4, v6 = routes(site.addressing)
        files = (rd / "routes4.cfg", rd / "routes6.cfg")
        files[0].write_text(v4)
        files[1].write_text(v6)
        argv = l3fwd_argv(site.name, cfg, site.sut_cpu, site.macs, files)
    pid = _spawn(argv, site.ns["sut"], rd)
    _wait_ready(pid, site.name, rd)
    return {
        "dpdk": {
            "app": sut,
            "argv": argv,
            "pid": pid,
            "file_prefix": prefix(site.name),
            "runtime_dir": str(RUNTIME / prefix(site.name)),
            "vdev": vdev,
            "fwd": cfg.testpmd_fwd if sut == "testpmd" else "lpm",
            "cpu": site.sut_cpu,
            "log": str(rd / LOG),
            **({"kernel_copy": f"dropped by nft table netdev {_KERNEL_COPY} at the veths' "
                "ingress"} if vdev == "af_packet" else {}),
        }
    }  # fmt: skip


def _drop_kernel_copy(netns: str) -> None:
    """Over packet sockets the kernel sees every frame too: drop its copy at the veths'
    ingress (after the sockets took theirs), so that it neither forwards nor counts it."""
    chains = "".join(
        f'  chain in_{dev} {{ type filter hook ingress device "{dev}" priority 0; policy drop; }}\n'
        for dev in (names.SUT_IN, names.SUT_OUT)
    )
    run(["nft", "-f", "-"], netns=netns, input_text=f"table netdev {_KERNEL_COPY} {{\n{chains}}}\n")


def _spawn(argv: list[str], netns: str, rd: Path) -> int:
    """Start the application in its own session, its output to the log, its standard
    input a pipe whose write end it holds itself (testpmd exits when its input closes)."""
    rfd, wfd = os.pipe()
    try:
        with open(rd / LOG, "wb") as log:
            p = subprocess.Popen(  # its output line by line (stdbuf), as it comes
                ["ip", "netns", "exec", netns, *PRIORITY, "stdbuf", "-oL", *argv],
                stdin=rfd, stdout=log, stderr=subprocess.STDOUT, pass_fds=(wfd,),
                start_new_session=True, close_fds=True,
            )  # fmt: skip
    finally:
        os.close(rfd)
        os.close(wfd)
    (rd / PIDFILE).write_text(f"{p.pid}\n")
    _STARTED[p.pid] = p
    return p.pid


def _log_tail(rd: Path, lines: int = 3) -> str:
    try:
        text = (rd / LOG).read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    useful = [ln for ln in text if ln.strip() and "libbpf" not in ln and "libxdp" not in ln]
    return " | ".join((useful or text)[-lines:]) or "no output"


def _wait_ready(pid: int, name: str, rd: Path) -> None:
    """Until the application's telemetry lists both ports (the path check then waits
    until it forwards); one line if it exits first."""
    p = _STARTED[pid]
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        code = p.poll()  # its exit, as its parent sees it (/proc is not, while it execs)
        if code is not None:
            raise TestbedError(
                f"the DPDK application exited while starting (status {code})",
                _log_tail(rd),
                "see what it said above; --dpdk-vdev af_packet is the other way to the veths",
            )
        with contextlib.suppress(OSError, ValueError), Telemetry(name) as t:
            if t.query("/ethdev/list") == [0, 1]:
                return
        time.sleep(0.1)
    raise TestbedError(
        f"the DPDK application did not start within {START_S:g} s",
        _log_tail(rd),
        "see what it said above",
    )


def _ours(pid: int, name: str) -> bool:
    """Process ``pid`` is this testbed's DPDK application (its command line has the
    testbed's file prefix) and has not ended."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return prefix(name).encode() in cmd.split(b"\0") and state != "Z"


def clear_runtime(name: str) -> None:
    shutil.rmtree(RUNTIME / prefix(name), ignore_errors=True)


def stop(dp: dict[str, Any], state: dict[str, Any]) -> None:
    """SIGTERM the application (SIGKILL if it lingers), then remove its runtime files."""
    name = state.get("name")
    if not isinstance(name, str):
        return
    from netassay.testbed.dataplane import run_dir

    try:
        pid = int((run_dir(name) / PIDFILE).read_text().strip())
    except (OSError, ValueError):
        pid = int((dp.get("dpdk") or {}).get("pid") or 0)
    if pid > 0:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not _ours(pid, name):
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + 5.0
            while _ours(pid, name) and time.monotonic() < deadline:
                time.sleep(0.02)
    clear_runtime(name)


def command_env(dp: dict[str, Any], name: str) -> dict[str, str]:
    """DPDK's file prefix for a user's command: ``dpdk-telemetry.py -f
    "$NETASSAY_DPDK_PREFIX"`` reaches this testbed's testpmd or l3fwd (its telemetry
    socket, as netassay reads its port statistics)."""
    return {"NETASSAY_DPDK_PREFIX": prefix(name)}


def log_tail(dp: dict[str, Any]) -> str:
    return _log_tail(Path(dp["run_dir"])) if dp.get("run_dir") else "no log"


def alive(dp: dict[str, Any], name: str) -> list[str]:
    """The application, when it is not running any more."""
    d = dp["dpdk"]
    return [] if _ours(int(d["pid"]), name) else [d["app"]]


def startup_failure(dp: dict[str, Any], name: str) -> str | None:
    """The application exited (while this process, which started it, waits for the
    path)."""
    p = _STARTED.get(int(dp["dpdk"]["pid"]))
    if p is not None:
        code = p.poll()
        if code is None:
            return None
        return f"{dp['dpdk']['app']} exited (status {code}): {_log_tail(Path(dp['run_dir']))}"
    gone = alive(dp, name)
    return f"{gone[0]} exited: {_log_tail(Path(dp['run_dir']))}" if gone else None


# -- its counters, through DPDK's telemetry socket -------------------------------------------
class Telemetry:
    """A connection to a DPDK application's telemetry socket (JSON over SEQPACKET)."""

    def __init__(self, name: str) -> None:
        self.path = RUNTIME / prefix(name) / TELEMETRY
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.sock.settimeout(5.0)
            self.sock.connect(str(self.path))
            hello = json.loads(self.sock.recv(16384))
            self.max_len = int(hello.get("max_output_len", 16384))
        except BaseException:
            self.sock.close()
            raise

    def query(self, cmd: str) -> Any:
        self.sock.send(cmd.encode())
        reply = json.loads(self.sock.recv(self.max_len + 1024))
        return reply.get(cmd.split(",")[0])

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


PORTS = ((0, names.SUT_IN), (1, names.SUT_OUT))


def flatten_stats(per_port: dict[str, dict[str, Any]]) -> dict[str, int]:
    """``/ethdev/stats`` of each port as ``<dev>/<field>`` (its per-queue lists left out)."""
    return {
        f"{dev}/{k}": int(v)
        for dev, stats in per_port.items()
        for k, v in stats.items()
        if isinstance(v, int) and not isinstance(v, bool)
    }


def drops(counters: dict[str, int], vdev: str) -> dict[str, int]:
    """The drops only DPDK sees, by loss location: what sut1's transmit ring could not
    take; over af_packet also what sut0's packet socket's ring could not."""
    ingress = counters.get(f"{names.SUT_IN}/imissed", 0) if vdev == "af_packet" else 0
    return {"sut_ingress": ingress, "sut_forward": 0,
            "sut_egress": counters.get(f"{names.SUT_OUT}/oerrors", 0)}  # fmt: skip


class Reader:
    """Both ports' statistics, read through one telemetry connection held open."""

    def __init__(self, dp: dict[str, Any], name: str) -> None:
        self.vdev = dp["dpdk"]["vdev"]
        self.tele = Telemetry(name)

    def read(self) -> dict[str, Any]:
        stats = {dev: self.tele.query(f"/ethdev/stats,{i}") or {} for i, dev in PORTS}
        c = flatten_stats(stats)
        return {"counters": c, "drops": drops(c, self.vdev)}

    def close(self) -> None:
        self.tele.close()


def reader(dp: dict[str, Any], name: str) -> Reader:
    return Reader(dp, name)


def describe(dp: dict[str, Any]) -> list[str]:
    d = dp["dpdk"]
    what = f"testpmd, {d['fwd']} forwarding" if d["app"] == "testpmd" else "l3fwd, LPM routes"
    lines = [
        f"  DPDK: {what}, ports {d['vdev']} on {names.SUT_IN} and {names.SUT_OUT}, lcores on CPU "
        f"{d['cpu']} (pid {d['pid']}, file prefix {d['file_prefix']})",
        f"  log: {d['log']}",
    ]
    if d.get("kernel_copy"):
        lines.append(f"  the kernel's copy of each frame: {d['kernel_copy']}")
    return lines


def version() -> str:
    """Debian's DPDK package version."""
    res = run(["dpkg-query", "-W", "-f=${Version}", "dpdk"], check=False, timeout=10)
    return f"DPDK {res.stdout.strip()}" if res.returncode == 0 else "DPDK (version unknown)"
