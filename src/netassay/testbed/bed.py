"""The testbed as a context manager: built (or attached), locked, always torn down.

``Testbed(name, cfg)`` builds a fresh testbed and removes it on exit, on error, on
Ctrl-C and on SIGTERM. ``Testbed.attach(name)`` uses one that ``netassay testbed up``
left running and leaves it up afterwards. Either way the testbed's lock is held for the
whole ``with`` block, so a second run on the same testbed is refused.
"""

from __future__ import annotations

import logging
import os
import signal
import statistics
from dataclasses import fields
from types import FrameType
from typing import Any

from netassay import names
from netassay.config import RX_MODE_BEFORE, TestbedConfig, with_frame_size
from netassay.errors import PrivilegeError, Terminated, TestbedError
from netassay.testbed import dataplane, receive, scale, topology
from netassay.testbed import state as testbed_state
from netassay.testbed.reverse import reverse_target
from netassay.traffic.generator import GenResult, run_generator

log = logging.getLogger("netassay.testbed")
PEAK_PROBE_S = 0.5  # one run of the generator's peak probe


def require_root(what: str = "the testbed") -> None:
    if os.geteuid() != 0:
        raise PrivilegeError(
            f"{what} needs root",
            "network namespaces, veth devices and sysctls need CAP_NET_ADMIN/CAP_SYS_ADMIN",
            "run it with sudo",
        )


def config_from_state(state: dict[str, Any]) -> Any:
    """The config a testbed was built with, of its kind (see topology.KINDS)."""
    kind = topology.kind_of(state if "kind" in state else state.get("config", {}))
    if kind != topology.FORWARDING:
        return topology.kind_module(kind).config_from_state(state)
    known = {f.name for f in fields(TestbedConfig)}
    # a testbed or an experiment from before --rx-mode received by netif_rx
    given = {"rx_mode": RX_MODE_BEFORE, **state["config"]}
    return TestbedConfig(**{k: v for k, v in given.items() if k in known})


def orphaned(state: dict[str, Any]) -> bool:
    """A testbed built for one sweep (not by 'testbed up') whose process is gone.

    Only a testbed that came fully up for 'testbed up' is marked persistent; one without
    the mark (its build crashed before the end) is not, so it is removed like any other.
    """
    if state.get("persistent") is True:
        return False
    pid = int(state.get("pid", 0))
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class _Sigterm:
    """Turn SIGTERM into an exception while the testbed is up, so teardown runs."""

    def __init__(self) -> None:
        self.old: Any = None

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if callable(self.old):  # the command line's own: it says the run was stopped
            self.old(signum, frame)
        raise Terminated()

    def install(self) -> None:
        try:
            self.old = signal.signal(signal.SIGTERM, self._handler)
        except ValueError:  # not the main thread
            self.old = None

    def restore(self) -> None:
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)
            self.old = None


class Testbed:
    """One testbed: its state (MACs, addresses, knobs) plus the lock while in use."""

    __test__ = False

    def __init__(self, name: str, cfg: Any = None, *, keep: bool = False):
        """``cfg``: a TestbedConfig (router, bridge) or the config of another testbed
        kind (see topology.KINDS); one lifecycle builds and removes them all."""
        self.name = names.validate_name(name)
        # the frame size, when none was given, is the smallest of the IP version
        self.cfg = with_frame_size(cfg or TestbedConfig())
        self.keep = keep  # leave it up on a clean exit (``testbed up``)
        self.attached = False
        self.owned = True  # torn down on exit (unless ``keep`` and no error)
        self.state: dict[str, Any] = {}
        self._lock = testbed_state.Lock(self.name)
        self._sigterm = _Sigterm()

    @classmethod
    def attach(cls, name: str) -> Testbed:
        """A testbed left up by ``netassay testbed up`` (it stays up afterwards)."""
        st = testbed_state.require_state(names.validate_name(name))
        tb = cls(name, config_from_state(st))
        tb.attached = True
        tb.state = st
        tb.owned = orphaned(st)  # built by a sweep that died: the resumer removes it
        return tb

    # -- context manager ----------------------------------------------------------
    def __enter__(self) -> Testbed:
        require_root()
        # its state and lock go there: one line before anything is built
        testbed_state.check_run_dir()
        self._lock.acquire()
        self._sigterm.install()
        building = False
        try:
            if self.attached:
                self.owned = orphaned(self.state)  # decided under the lock
                self._check_alive()
            else:
                topology.check(self.cfg)
                topology.refuse_existing(self.name)
                # a global sysctl another testbed holds at another value: refused before
                # anything is built (build checks again, under a lock, when it sets it)
                testbed_state.refuse_sysctl_conflicts(
                    self.name, self.cfg.global_sysctls(), topology.list_netns()
                )
                building = True
                self.state = topology.build(self.name, self.cfg)  # written with persistent false
                self.cfg = config_from_state(self.state)  # as built: 'auto' resolved
                self.state["persistent"] = self.keep  # only now that it is fully up
                testbed_state.write_state(self.name, self.state)
        except BaseException:
            self._close(teardown=building)
            raise
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        failed = exc_type is not None
        self._close(teardown=self.owned and (failed or not self.keep))

    def _close(self, *, teardown: bool) -> None:
        try:
            if teardown:
                # ignore a second Ctrl-C while we clean up
                old = signal.signal(signal.SIGINT, signal.SIG_IGN)
                try:
                    topology.teardown(self.name)
                finally:
                    signal.signal(signal.SIGINT, old)
        finally:
            self._sigterm.restore()
            self._lock.release()

    def _check_alive(self) -> None:
        check_open = topology.kind_hook(self.state, "check_open")
        if check_open is not None:  # a kind with no namespaces of its own (external)
            check_open(self)
            return
        have = set(topology.list_netns())
        missing = [ns for ns in self.state["namespaces"].values() if ns not in have]
        if missing:
            raise TestbedError(
                f"testbed '{self.name}' is broken",
                f"namespace(s) {', '.join(missing)} are gone",
                "run 'netassay testbed cleanup' and bring it up again",
            )
        if dataplane.is_dataplane(self.state):  # its data plane still runs, and still forwards
            dataplane.alive(self.state)
            try:
                dataplane.check_path(self.state, topology.dataplane_gen_flags(self.state), wait_s=0)
            finally:
                testbed_state.write_state(self.name, self.state)

    # -- what the trial engine needs ---------------------------------------------
    def ns(self, role: str) -> str:
        ns: str = self.state["namespaces"][role]
        return ns

    @property
    def target(self) -> dict[str, str]:
        target: dict[str, str] = self.state["target"]
        return target

    @property
    def gen_cpu(self) -> int | None:
        return self.state.get("gen_cpu")

    def gen_flags(self, shared: bool = False) -> list[str]:
        """netassay-gen flags this testbed needs: how it sends into the SUT's receive
        mode (``testbed.receive``) and the pinned CPU; ``shared``: two generators share
        that CPU (--bidirectional)."""
        cpu = [] if self.gen_cpu is None else ["--cpu", str(self.gen_cpu)]
        if "gen_flags" in self.state:  # a kind with a wire of its own (external)
            return [*self.state["gen_flags"], *cpu]
        return [*receive.gen_flags(self.cfg, shared), *cpu]

    def send(
        self, rate_pps: float | str, duration_s: float, reverse: bool = False,
        share_cpu: bool = False, count: int | None = None,
    ) -> GenResult:  # fmt: skip
        """Run netassay-gen in the generator namespace (its wire and CPU as the testbed
        says); ``rate_pps`` may be ``"max"``; ``reverse``: in the sink's namespace, back
        towards the generator (``--bidirectional``, ``testbed.reverse``); ``share_cpu``:
        it waits by yielding its CPU to another generator pinned there; ``count``:
        exactly that many frames at ``rate_pps`` (a burst; ``duration_s`` is then its
        length at that rate, for the timeout). The one place a trial's generator call
        is built."""
        t = reverse_target(self.state) if reverse else self.target
        share = ["--share-cpu"] if share_cpu else []
        if isinstance(self.cfg, TestbedConfig) and not reverse:  # the flows' tuples
            share += scale.flow_flags(self.cfg, self.state)
        return run_generator(
            t["netns"],
            t["dev"],
            t["dst_mac"],
            t["src"],
            t["dst"],
            rate_pps,
            duration_s,
            size_bytes=self.cfg.size_bytes or names.MIN_FRAME,
            flows=self.cfg.flows,
            best_effort=True,
            extra=[*self.gen_flags(share_cpu), *share],
            timeout_s=duration_s + 30,
            imix=self.cfg.imix_spec() if isinstance(self.cfg, TestbedConfig) else None,
            count=count,
            pcap=self.cfg.pcap if isinstance(self.cfg, TestbedConfig) else None,
        )

    def probe_peak(self, probes: int = 3) -> float:
        """The generator's highest achieved rate through this testbed: the median of
        ``probes`` runs of ``PEAK_PROBE_S`` at ``--rate max`` (one run is at the mercy
        of a stall of the machine)."""
        return statistics.median(
            float(self.send("max", PEAK_PROBE_S).achieved_rate_pps or 0.0) for _ in range(probes)
        )
