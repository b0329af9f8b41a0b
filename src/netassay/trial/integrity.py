"""Is the testbed a trial ran on still the testbed that was built?

Another process can change the embedded testbed under a run: delete one of its
namespaces, take a veth down (and up again), detach the sink's XDP program. What the
counters then show is not what the SUT did, so the trial engine checks the testbed
before each trial and around it, from the snapshots it reads anyway (each namespace's
``link_state``: ``counters.snapshot``):

- before a trial (``Watch.problem``): every namespace is there and every link is up,
  else the run cannot go on (the engine waits a moment for links, then stops with one
  line); a link whose carrier went off and on since the last trial lost its static
  routes and neighbours on the way, so the engine restores them first
  (``Watch.flapped``);
- around a trial (``faults``): a namespace deleted, a link that went down or whose
  carrier changed, the sink's XDP program detached or replaced, test frames that
  passed the sink's XDP program uncounted. Each is a measurement fault
  (``quality.TESTBED_FAULT``, ``quality.SINK_FAULT``): the trial is stored, named and
  left out of the statistics; its loss is never the SUT's.

Pure, but for ``missing_namespaces``, which looks at ``/run/netns``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from netassay import quality
from netassay.counters.snapshot import LINK_STATE, LinkState, Snapshot

NETNS_DIR = Path("/run/netns")
Link = tuple[str, str]  # (role, device)


def missing_namespaces(namespaces: Iterable[str]) -> list[str]:
    """The named namespaces that are no longer there (deleted by another process; one
    a thread of this process still holds lives on, nameless)."""
    return [ns for ns in namespaces if not (NETNS_DIR / ns).exists()]


def links(snap: Snapshot, only: dict[str, tuple[str, ...]] | None = None) -> dict[Link, LinkState]:
    """Every link of a snapshot but loopback: (role, device) -> its ``link_state``.
    ``only``: the devices of a role that are the testbed's (role -> devices); the other
    links of that namespace are left alone (a data plane's own, e.g. Open vSwitch's
    bridge port, up or down as the data plane keeps it)."""
    out: dict[Link, LinkState] = {}
    for role, ns in snap.get("ns", {}).items():
        mine = (only or {}).get(role)
        for dev, state in ns.get(LINK_STATE, {}).items():
            if dev != "lo" and (mine is None or dev in mine):
                out[(role, dev)] = state
    return out


def _where(link: Link, namespaces: dict[str, str]) -> str:
    role, dev = link
    return f"{dev} in {namespaces.get(role, role)}"


def link_faults(
    before: Snapshot, after: Snapshot, namespaces: dict[str, str],
    only: dict[str, tuple[str, ...]] | None = None,
) -> list[str]:  # fmt: skip
    """The testbed's links that changed during a trial: gone, down, or down and up
    again (their carrier changed); ``only`` as ``links`` takes it."""
    was, now = links(before, only), links(after, only)
    out = []
    for link, state in sorted(was.items()):
        where = _where(link, namespaces)
        cur = now.get(link)
        if cur is None:
            out.append(
                f"{quality.TESTBED_FAULT}: link {where} was deleted during the trial; the frames "
                "sent after it were lost to the testbed, not to the SUT"
            )
        elif not cur.get("up"):
            how = (
                "went down"
                if not cur.get("admin_up", False)
                else "lost its carrier (its peer went down)"
            )
            out.append(
                f"{quality.TESTBED_FAULT}: link {where} {how} during the trial (and is still "
                "down); the frames sent after it were lost to the testbed, not to the SUT"
            )
        elif n := _carrier_changes(cur, state):
            out.append(
                f"{quality.TESTBED_FAULT}: link {where} went down and up again during the trial "
                f"({n} carrier change(s)); the frames sent meanwhile were lost to the "
                "testbed, not to the SUT"
            )
    return out


def _changes(state: LinkState) -> int | None:
    v = state.get("carrier_changes")
    return None if v is None else int(v)


def _carrier_changes(cur: LinkState, before: LinkState) -> int:
    """The link's carrier changes since ``before`` (0 where either count is unknown)."""
    now, then = _changes(cur), _changes(before)
    return 0 if now is None or then is None else now - then


def sink_faults(
    before: Snapshot, after: Snapshot, sink: Link, kind: str,
    passed: int, namespaces: dict[str, str],
) -> list[str]:  # fmt: skip
    """The sink's XDP program (``kind`` xdp or xdp+nft, on ``sink``) detached or
    replaced during a trial, or, with the ``xdp`` sink, ``passed`` test frames (the nft
    counter behind the program) that went past it uncounted."""
    if kind == "nft":
        return []
    was, now = _xdp_prog(before, sink), _xdp_prog(after, sink)
    where = _where(sink, namespaces)
    out = []
    if was is not None and now != was:
        how = "detached from" if now is None else "replaced on"
        out.append(
            f"{quality.SINK_FAULT}: the sink's XDP program was {how} {where} during the trial "
            "(by another process); the frames that arrived after it were not counted, so "
            "what the SUT forwarded is not known"
        )
    if kind == "xdp" and passed > 0:
        out.append(
            f"{quality.SINK_FAULT}: {passed} test frame(s) went past the sink's XDP program "
            "uncounted (its nft counter behind it saw them); they are not SUT loss"
        )
    return out


def sink_attached(snap: Snapshot, sink: Link) -> bool:
    """Does the sink's link hold an XDP program (the sink's own: nothing else attaches
    one there)?"""
    return _xdp_prog(snap, sink) is not None


def _xdp_prog(snap: Snapshot, link: Link) -> int | None:
    """The id of the XDP program on ``link`` (None: none, or no such link)."""
    state = links(snap).get(link)
    return None if state is None else state.get("xdp_prog")


@dataclass
class Watch:
    """The testbed's links as the last trial left them: which exist and their carrier
    changes, so that the next trial sees what changed between them."""

    carriers: dict[Link, int | None] = field(default_factory=dict)
    known: bool = False
    # the devices of a role that are the testbed's (``links``); None: every one
    only: dict[str, tuple[str, ...]] | None = None

    def problem(self, snap: Snapshot, namespaces: dict[str, str]) -> str | None:
        """Why no trial can run on the testbed as ``snap`` shows it (None: it can): a
        namespace deleted, a link gone or down."""
        gone = missing_namespaces(namespaces.values())
        if gone:
            return f"namespace(s) {', '.join(gone)} were deleted (by another process)"
        now = links(snap, self.only)
        expected = set(self.carriers) if self.known else set(now)
        lost = sorted(expected - set(now))
        if lost:
            return f"link {_where(lost[0], namespaces)} was deleted (by another process)"
        down = sorted(k for k in expected if not now[k].get("admin_up", now[k].get("up")))
        if down:  # set down: by another process (netassay never does)
            return f"link {_where(down[0], namespaces)} is down (set down by another process)"
        dark = sorted(k for k in expected if not now[k].get("up"))
        if dark:
            return f"link {_where(dark[0], namespaces)} has no carrier (its peer is down)"
        return None

    def flapped(self, snap: Snapshot) -> list[Link]:
        """The links whose carrier changed since ``settle`` last saw them."""
        if not self.known:
            return []
        now = links(snap, self.only)
        return sorted(
            k for k, n in self.carriers.items()
            if k in now and n is not None and _changes(now[k]) not in (None, n)
        )  # fmt: skip

    def settle(self, snap: Snapshot) -> None:
        """The testbed as ``snap`` shows it is the one to compare the next trial with."""
        self.carriers = {k: _changes(v) for k, v in links(snap, self.only).items()}
        self.known = True
