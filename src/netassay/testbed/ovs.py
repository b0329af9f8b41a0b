"""Open vSwitch's userspace datapath as the SUT (``--sut ovs``; see ``testbed.dataplane``).

netassay starts its own ``ovsdb-server`` and ``ovs-vswitchd`` (Debian's
openvswitch-switch, no kernel module, no service manager) in the SUT's namespace, with
a run directory of the testbed's own (``<run dir>/<testbed>.dp/``: the database, the
sockets, the logs and pid files), pinned to the SUT's CPU, and stops them when the
testbed goes down (``ovs-appctl exit --cleanup``, then a signal). Between ``sut0`` and
``sut1`` it makes one bridge of ``datapath_type=netdev`` whose ports are of
``--ovs-port`` type: ``afxdp`` (the default: a PMD thread busy-polls both AF_XDP sockets
on the SUT's CPU, ``pmd-cpu-mask``), ``afxdp-nonpmd`` (polled by the main thread) or
``system`` (packet sockets).

Its OpenFlow table (``fail_mode=secure``: only netassay's rules) forwards by
``--ovs-flows``: ``normal`` (one rule, action NORMAL, with both ends' MACs as static
FDB entries so nothing floods) or ``ports`` (one ``in_port -> output`` rule per
direction). ``--ovs-rules N`` adds N rules above them that test frames never match (UDP
to 16 addresses x 65536 ports apart from the sink's), to grow the flow table.
``--sut-cap`` is an OpenFlow meter of that many packets/s (``pktps``, the bucket of
``dataplane.cap_bucket``) on the forward direction's rule: its band's drops are the
SUT's egress loss.

Before and after every trial netassay reads its port statistics (``ovs-ofctl
dump-ports``, live from ovs-vswitchd, and AF_XDP's own counters) and the meter's
(``meter-stats``); OVS's transmit drops on ``sut1`` and the meter's are drops no kernel
counter sees (``drops``); its receive drops on ``sut0`` are the kernel's too (the veth
counts a frame its XDP program could not hand to the full socket). So are the frames its
datapath dropped by its own count (``ovs-appctl coverage/show``'s drop counters):
``drop_action_of_pipeline``, what the OpenFlow pipeline decided to drop (a drop rule, a
frame no rule matched: ``fail_mode=secure``), and the datapath's other drop reasons
(``drop_action_*``, ``datapath_drop_*``; the meter's, ``datapath_drop_meter``, is left
to the meter's own statistics), located at the SUT's forwarding (``sut_forward``).
ovs-vswitchd's threads add their coverage counts to the totals it shows at most once a
second (``COVERAGE_CLEAR_INTERVAL``): a read says ``lag_s``, and a trial whose loss is
not yet accounted for reads again that long after its traffic ended
(``trial.engine._closing_read``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from netassay import names
from netassay.config import TestbedConfig
from netassay.errors import TestbedError, ToolError
from netassay.proc import run
from netassay.testbed.dataplane import PRIORITY, Site, need_program

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
BRIDGE = "br0"
PROGRAMS = ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl")
OF = "OpenFlow13"  # meters need it
PROTOCOLS = "OpenFlow10,OpenFlow13,OpenFlow14"
TIMEOUT_S = 30.0
METER = 1
RULE_PRIORITY = 20  # --ovs-rules: above the forwarding rules (priority 1, 0)
RULES_PER_ADDRESS = 65536
SUBDIR = "ovs"
INSTALL = (
    "install Debian's openvswitch-switch (apt-get install openvswitch-switch) or run 'make setup'"
)


def validate(cfg: TestbedConfig) -> None:
    """Open vSwitch's programs are installed (``make setup``)."""
    for prog in PROGRAMS:
        need_program(prog, f"Open vSwitch ({prog})", INSTALL)
    if not SCHEMA.is_file():
        raise ToolError("Open vSwitch's database schema is missing", f"no {SCHEMA}", INSTALL)


def uses_af_xdp(cfg: TestbedConfig) -> bool:
    return str(cfg.ovs_port).startswith("afxdp")


def _dir(site_or_dir: Site | Path) -> Path:
    base = site_or_dir.run_dir if isinstance(site_or_dir, Site) else site_or_dir
    return base / SUBDIR


class Ovs:
    """The commands of one netassay-started Open vSwitch (its own sockets)."""

    def __init__(self, rd: Path, netns: str | None = None) -> None:
        self.rd = rd
        self.netns = netns

    @property
    def db(self) -> str:
        return f"unix:{self.rd / 'db.sock'}"

    @property
    def mgmt(self) -> str:
        return f"unix:{self.rd / (BRIDGE + '.mgmt')}"

    def ctl(self, daemon: str) -> str:
        return str(self.rd / f"{daemon}.ctl")

    def vsctl(self, *args: str, timeout: float = TIMEOUT_S) -> str:
        argv = ["ovs-vsctl", f"--db={self.db}", f"--timeout={int(timeout)}", *args]
        return run(argv, timeout=timeout + 5).stdout

    def ofctl(self, *args: str, input_text: str | None = None, timeout: float = TIMEOUT_S) -> str:
        return run(["ovs-ofctl", "-O", OF, *args], input_text=input_text, timeout=timeout).stdout

    def appctl(self, daemon: str, *args: str, check: bool = True) -> str:
        return run(["ovs-appctl", "-t", self.ctl(daemon), *args], check=check, timeout=10).stdout


# -- the lifecycle ------------------------------------------------------------------------
def start(site: Site) -> dict[str, Any]:
    """Start the daemons, make the bridge and its ports, load the rules (and the cap's
    meter); return what the testbed's state records."""
    cfg = site.cfg
    rd = _dir(site)
    rd.mkdir(parents=True, exist_ok=True)
    ovs = Ovs(rd, site.ns["sut"])
    cpus = str(site.sut_cpu) if site.sut_cpu is not None else None
    pids = _daemons(ovs, site.ns["sut"], cpus)
    t0 = time.monotonic()
    ovs.vsctl(
        "--", "set", "Open_vSwitch", ".", *(
            [f"other_config:pmd-cpu-mask={1 << site.sut_cpu:#x}"]
            if site.sut_cpu is not None else []
        ),
        "--", "add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev",
        "fail_mode=secure", f"protocols={PROTOCOLS}",
        *_port_args(names.SUT_IN, str(cfg.ovs_port)), *_port_args(names.SUT_OUT, str(cfg.ovs_port)),
    )  # fmt: skip
    ofports = {dev: int(ovs.vsctl("get", "Interface", dev, "ofport").strip()) for dev in
               (names.SUT_IN, names.SUT_OUT)}  # fmt: skip
    bad = [d for d, p in ofports.items() if p <= 0]
    if bad:
        why = ovs.vsctl("get", "Interface", bad[0], "error").strip()
        raise TestbedError(
            f"Open vSwitch could not add {bad[0]} as a port of type {cfg.ovs_port}",
            why or "its ofport is -1",
            f"try another --ovs-port; ovs-vswitchd's log says: {_errors(rd)}",
        )
    meter = _meter(ovs, cfg.sut_cap_pps, site.cap_burst) if cfg.sut_cap_pps else None
    flows = forwarding_rules(str(cfg.ovs_flows), meter is not None)
    ovs.ofctl("add-flows", ovs.mgmt, "-", input_text="\n".join(flows) + "\n")
    if cfg.ovs_flows == "normal":  # both ends' MACs known: NORMAL never floods
        for dev, mac in (
            (names.SUT_OUT, site.macs[names.SINK_DEV]),
            (names.SUT_IN, site.macs[names.TG_DEV]),
        ):
            ovs.appctl("ovs-vswitchd", "fdb/add", BRIDGE, dev, "0", mac)
    setup_s = time.monotonic() - t0
    rules = int(cfg.ovs_rules or 0)
    t1 = time.monotonic()
    if rules:
        text = "\n".join(extra_rules(rules, cfg.ip_version)) + "\n"
        ovs.ofctl("add-flows", ovs.mgmt, "-", input_text=text, timeout=max(60.0, rules / 1000))
    rules_s = time.monotonic() - t1
    # the flow table as Open vSwitch holds it now: the forwarding rules and the extra ones
    held = table_flows(ovs.ofctl("dump-aggregate", ovs.mgmt))
    if held is not None and held < len(flows) + rules:
        raise TestbedError(
            f"Open vSwitch holds {held:,} OpenFlow rules, not {len(flows) + rules:,}",
            "ovs-ofctl add-flows returned but the table is short",
            f"try fewer --ovs-rules; ovs-vswitchd's log says: {_errors(rd)}",
        )  # fmt: skip
    return {
        "ovs": {
            "dir": str(rd),
            "pids": pids,
            "bridge": BRIDGE,
            "port_type": cfg.ovs_port,
            "ofports": ofports,
            "flows": str(cfg.ovs_flows),
            "rules": flows,
            "extra_rules": rules,
            "extra_rules_load_s": round(rules_s, 3),
            "table_flows": held,
            "setup_s": round(setup_s, 3),
            "cpu": site.sut_cpu,
            "pmd_cpu_mask": f"{1 << site.sut_cpu:#x}" if site.sut_cpu is not None else None,
            **({"meter": meter} if meter else {}),
        }
    }


def table_flows(aggregate: str) -> int | None:
    """The flow count of ``ovs-ofctl dump-aggregate``'s reply (None: none in it)."""
    m = re.search(r"flow_count=(\d+)", aggregate)
    return int(m.group(1)) if m else None


def _port_args(dev: str, port_type: str) -> list[str]:
    return ["--", "add-port", BRIDGE, dev, "--", "set", "Interface", dev, f"type={port_type}"]


def _daemons(ovs: Ovs, netns: str, cpus: str | None) -> dict[str, int]:
    """ovsdb-server on a fresh database, then ovs-vswitchd: each detaches once it is
    ready, in the SUT's namespace, pinned to ``cpus`` (None: not pinned)."""
    rd = ovs.rd
    db = rd / "conf.db"
    db.unlink(missing_ok=True)
    run(["ovsdb-tool", "create", str(db), str(SCHEMA)])
    dirs = [f"OVS_{d}DIR={rd}" for d in ("RUN", "LOG", "DB", "SYSCONF")]  # nothing in /etc, /var
    pin = ["env", *dirs, *PRIORITY, *(["taskset", "-c", cpus] if cpus is not None else [])]
    common = ["--detach", "--no-chdir", "--verbose=err", "--verbose=file:info"]
    run([*pin, "ovsdb-server", str(db), f"--remote=punix:{rd / 'db.sock'}",
         f"--pidfile={rd / 'ovsdb-server.pid'}", f"--unixctl={ovs.ctl('ovsdb-server')}",
         f"--log-file={rd / 'ovsdb-server.log'}", *common],
        netns=netns, timeout=TIMEOUT_S)  # fmt: skip
    ovs.vsctl("--no-wait", "init")
    run([*pin, "ovs-vswitchd", ovs.db, f"--pidfile={rd / 'ovs-vswitchd.pid'}",
         f"--unixctl={ovs.ctl('ovs-vswitchd')}", f"--log-file={rd / 'ovs-vswitchd.log'}",
         *common], netns=netns, timeout=TIMEOUT_S)  # fmt: skip
    return {d: pid for d in ("ovsdb-server", "ovs-vswitchd") if (pid := _pid(rd, d)) is not None}


def _pid(rd: Path, daemon: str) -> int | None:
    try:
        return int((rd / f"{daemon}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def _ours(pid: int, daemon: str, rd: Path) -> bool:
    """Process ``pid`` is this testbed's ``daemon`` (its command line names our run
    directory): a pid file never makes netassay signal another process."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    mine = any(str(rd).encode() in a for a in cmd)
    return bool(cmd) and cmd[0].endswith(daemon.encode()) and mine


def forwarding_rules(flows: str, metered: bool) -> list[str]:
    """The forwarding rules (``ovs-ofctl add-flows`` lines): NORMAL, or one in_port ->
    output rule per direction; with a cap, the forward direction's through the meter."""
    meter = f"meter:{METER}," if metered else ""
    fwd, rev = f"in_port={names.SUT_IN}", f"in_port={names.SUT_OUT}"
    if flows == "normal":
        return [
            "priority=0,actions=NORMAL",
            *([f"priority=1,{fwd},actions={meter}NORMAL"] if metered else []),
        ]
    return [
        f"priority=1,{fwd},actions={meter}output:{names.SUT_OUT}",
        f"priority=1,{rev},actions=output:{names.SUT_IN}",
    ]


def extra_rules(n: int, ip_version: int) -> list[str]:
    """``--ovs-rules``: n rules no test frame matches: UDP to address ``i // 65536`` of
    a block apart from the testbed's (198.18.128.0/28, 2001:2:0:ff::/124), port ``i %
    65536``, dropped."""
    out = []
    for i in range(n):
        a, port = divmod(i, RULES_PER_ADDRESS)
        if ip_version == 6:
            match = f"udp6,ipv6_dst={ipaddress.IPv6Address('2001:2:0:ff::') + a}"
        else:
            match = f"udp,nw_dst={ipaddress.IPv4Address('198.18.128.0') + a}"
        out.append(f"priority={RULE_PRIORITY},{match},tp_dst={port},actions=drop")
    return out


def _meter(ovs: Ovs, pps: float, burst: int | None) -> dict[str, Any]:
    """The cap's meter: ``pps`` packets/s, a bucket of ``burst`` packets, dropping."""
    bucket = int(burst or max(64, round(pps * 0.02)))
    spec = (f"meter={METER},pktps,burst,stats,bands=type=drop,rate={round(pps)},"
            f"burst_size={bucket}")  # fmt: skip
    ovs.ofctl("add-meter", ovs.mgmt, spec)
    return {"id": METER, "pps": round(pps), "burst_pkts": bucket, "spec": spec}


def stop(dp: dict[str, Any], state: dict[str, Any]) -> None:
    """ovs-vswitchd and ovsdb-server told to exit (vswitchd detaching its XDP programs),
    then signalled if they did not, by the pids their files name (only if they are ours)."""
    base = Path(dp["run_dir"]) if dp.get("run_dir") else _run_dir_of(state)
    if base is None:
        return
    rd = _dir(base)
    if not rd.is_dir():
        return
    ovs = Ovs(rd)
    for daemon, args in (("ovs-vswitchd", ("exit", "--cleanup")), ("ovsdb-server", ("exit",))):
        pid = _pid(rd, daemon)
        if pid is None or not _ours(pid, daemon, rd):
            continue
        if Path(ovs.ctl(daemon)).exists():
            with contextlib.suppress(Exception):
                ovs.appctl(daemon, *args, check=False)
        _wait_gone(pid, daemon, rd)


def command_env(dp: dict[str, Any], name: str) -> dict[str, str]:
    """Open vSwitch's own variables for a user's command: its tools then reach this
    testbed's daemons with no option (``ovs-vsctl show``, ``ovs-ofctl dump-ports br0``:
    ``$OVS_RUNDIR/db.sock``, ``$OVS_RUNDIR/br0.mgmt``)."""
    rd = str(_dir(Path(dp["run_dir"])))
    return {f"OVS_{d}DIR": rd for d in ("RUN", "LOG", "DB", "SYSCONF")}


def _run_dir_of(state: dict[str, Any]) -> Path | None:
    from netassay.testbed.dataplane import run_dir

    name = state.get("name")
    return run_dir(name) if isinstance(name, str) else None


def _wait_gone(pid: int, daemon: str, rd: Path, grace_s: float = 5.0) -> None:
    """Wait for ``pid`` to end; SIGTERM, then SIGKILL, if it does not."""
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and _ours(pid, daemon, rd):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not _ours(pid, daemon, rd) or _zombie(pid):
                return
            time.sleep(0.02)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def alive(dp: dict[str, Any], name: str) -> list[str]:
    """The daemons of this data plane that are not running any more."""
    rd = Path(dp["ovs"]["dir"])
    return [d for d, pid in dp["ovs"]["pids"].items() if not _ours(int(pid), d, rd)]


def startup_failure(dp: dict[str, Any], name: str) -> str | None:
    gone = alive(dp, name)
    return f"{', '.join(gone)} exited: {log_tail(dp)}" if gone else None


def _errors(rd: Path, lines: int = 3) -> str:
    """The last warnings and errors ovs-vswitchd logged."""
    try:
        text = (rd / "ovs-vswitchd.log").read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    bad = [ln.split("|", 4)[-1] for ln in text if "|ERR|" in ln or "|WARN|" in ln]
    return " | ".join(bad[-lines:]) or "no warning or error"


def log_tail(dp: dict[str, Any]) -> str:
    return _errors(Path(dp["ovs"]["dir"])) if dp.get("ovs") else "no log"


# -- its counters ---------------------------------------------------------------------------
_PORT = re.compile(r"^\s*port\s+(\S+?):\s*rx\s+(.*)$")
_TX = re.compile(r"^\s*tx\s+(.*)$")
_KV = re.compile(r"(\w+)=([0-9]+|\?)")
_CUSTOM = re.compile(r"(\w+)=([0-9]+)")
_BAND = re.compile(r"^\s*(\d+):\s*packet_count:(\d+)\s+byte_count:(\d+)")
_METER_IN = re.compile(r"meter:(\d+)\s.*packet_in_count:(\d+)")
_COVERAGE = re.compile(r"^(\w+)\s.*\btotal:\s*(\d+)\s*$")
PIPELINE = "drop_action_of_pipeline"  # the OpenFlow pipeline's drops (a rule, a miss)
DROP_REASONS = ("drop_action_", "datapath_drop_")
METER_DROPS = "datapath_drop_meter"  # the meter band's: its own statistics count them
COVERAGE_LAG_S = 1.1  # ovs-vswitchd's threads add to the totals once a second


def parse_dump_ports(text: str, names: dict[int, str]) -> dict[str, int]:
    """``ovs-ofctl dump-ports`` (OpenFlow 1.4: with the ports' own counters) as flat
    ``<port>/<field>`` counts; ``names`` gives a port number its name. A count OVS does
    not keep (``?``) is left out."""
    out: dict[str, int] = {}
    port = None
    custom = False
    for line in text.splitlines():
        m = _PORT.match(line)
        if m:
            num = m.group(1)
            port = names.get(int(num), num) if num.isdigit() else num.lower()
            custom = False
            for k, v in _KV.findall(m.group(2)):
                if v != "?":
                    out[f"{port}/rx_{k}"] = int(v)
            continue
        if port is None:
            continue
        t = _TX.match(line)
        if t:
            for k, v in _KV.findall(t.group(1)):
                if v != "?":
                    out[f"{port}/tx_{k}"] = int(v)
        elif "CUSTOM Statistics" in line:
            custom = True
        elif custom:
            for k, v in _CUSTOM.findall(line):
                out[f"{port}/{k}"] = int(v)
    return out


def parse_meter_stats(text: str) -> dict[str, int]:
    """``ovs-ofctl meter-stats``: each meter's frames in and each band's drops."""
    out: dict[str, int] = {}
    meter = None
    for line in text.splitlines():
        m = _METER_IN.search(line)
        if m:
            meter = m.group(1)
            out[f"meter{meter}/packets_in"] = int(m.group(2))
            continue
        b = _BAND.match(line)
        if b and meter is not None:
            out[f"meter{meter}/band{b.group(1)}_dropped"] = int(b.group(2))
    return out


def parse_coverage(text: str) -> dict[str, int]:
    """``ovs-appctl coverage/show``: the datapath's drops by its own count, as two
    counters always present (a coverage counter never hit is not listed): its OpenFlow
    pipeline's (``datapath/pipeline_drops``) and its other drop reasons' sum
    (``datapath/other_drops``), the meter's left out."""
    pipeline = other = 0
    for line in text.splitlines():
        m = _COVERAGE.match(line.strip())
        if not m:
            continue
        name, n = m.group(1), int(m.group(2))
        if name == PIPELINE:
            pipeline = n
        elif name.startswith(DROP_REASONS) and name != METER_DROPS:
            other += n
    return {"datapath/pipeline_drops": pipeline, "datapath/other_drops": other}


def drops(counters: dict[str, int], metered: bool) -> dict[str, int]:
    """The drops only Open vSwitch sees, by loss location: what its datapath dropped by
    its own count (its pipeline's decision and its other drop reasons: the SUT's
    forwarding), what it could not send on ``sut1`` and what the cap's meter dropped
    (its receive drops are the veth's too)."""
    egress = counters.get(f"{names.SUT_OUT}/tx_drop", 0)
    if metered:
        egress += counters.get(f"meter{METER}/band0_dropped", 0)
    forward = counters.get("datapath/pipeline_drops", 0) + counters.get("datapath/other_drops", 0)
    return {"sut_ingress": 0, "sut_forward": forward, "sut_egress": egress}


class Reader:
    """Open vSwitch's counters, read live from ovs-vswitchd."""

    def __init__(self, dp: dict[str, Any]) -> None:
        o = dp["ovs"]
        self.ovs = Ovs(Path(o["dir"]))
        self.names = {int(p): dev for dev, p in o["ofports"].items()}
        self.metered = "meter" in o

    def read(self) -> dict[str, Any]:
        try:
            text = run(["ovs-ofctl", "-O", "OpenFlow14", "dump-ports", self.ovs.mgmt]).stdout
            c = parse_dump_ports(text, self.names)
            if self.metered:
                c.update(parse_meter_stats(self.ovs.ofctl("meter-stats", self.ovs.mgmt)))
            c.update(parse_coverage(self.ovs.appctl("ovs-vswitchd", "coverage/show")))
        except ToolError as exc:
            raise TestbedError(
                "cannot read Open vSwitch's counters", exc.why,
                "is ovs-vswitchd still running? ('netassay testbed show'; bring the testbed "
                "down and up again if it is not)",
            ) from exc  # fmt: skip
        return {"counters": c, "drops": drops(c, self.metered), "lag_s": COVERAGE_LAG_S}

    def close(self) -> None:
        return None


def reader(dp: dict[str, Any], name: str) -> Reader:
    return Reader(dp)


def describe(dp: dict[str, Any]) -> list[str]:
    o = dp["ovs"]
    pmd = f"PMD thread on CPU {o['cpu']}" if o["port_type"] == "afxdp" else "no PMD thread"
    lines = [
        f"  Open vSwitch: bridge {o['bridge']} (datapath netdev), ports {names.SUT_IN} and "
        f"{names.SUT_OUT} of type {o['port_type']} ({pmd}; daemons pinned to CPU {o['cpu']})",
        f"  flows: {o['flows']}: " + "; ".join(o["rules"]),
    ]
    if o.get("extra_rules"):
        lines.append(
            f"  --ovs-rules: {o['extra_rules']} more rules test frames never match (loaded in "
            f"{o['extra_rules_load_s']} s)"
        )
    if o.get("meter"):
        m = o["meter"]
        lines.append(f"  cap: meter {m['id']}: {m['pps']} packets/s, bucket {m['burst_pkts']}")
    lines.append(f"  run directory: {o['dir']} (pids {o['pids']})")
    return lines


def version() -> str:
    return run(["ovs-vswitchd", "--version"]).stdout.splitlines()[0].strip()
