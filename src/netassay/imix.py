"""IMIX: a frame mix sent in one fixed repeating order, the sink counting every
size of it.

A mix is frame sizes with whole weights, ``64:7,590:4,1514:1``. Sizes count the frame
WITHOUT its FCS, as ``--size`` does (and trafgen). ``simple`` is TRex's "imix" profile:
7:4:1 of the 64, 594 and 1518-byte frames of the IMIX literature, which count the FCS;
TRex's own profile sends them as 60, 590 and 1514 bytes without it, and so does
netassay, but its frames carry a 22-byte stamp after the UDP header, so the 60 is raised
to the smallest frame it sends (64 for IPv4, 84 for IPv6: ``names.min_frame_bytes``), as
``--sizes rfc2544`` raises RFC 2544's 64 (``shared.sizes``).

netassay-gen sends frame k of a run with the size of slot ``k % W`` of a cycle of W
frames (W the weights' sum), ordered by smooth weighted round robin so that each size
is spread over the cycle (``cycle``: ``simple`` is 64 590 64 64 590 64 1514 64 590 64
590 64); what it sent of each size follows from the number sent (``sent_per_size``).
A rate is in frames per second of all sizes; in bit/s at layer 2 each frame counts with
its FCS, at layer 1 also with its preamble, delimiter and inter-frame gap
(``bits_per_frame``).
"""

from __future__ import annotations

from netassay.errors import UsageError
from netassay.names import min_frame_bytes

SIMPLE = ((60, 7), (590, 4), (1514, 1))  # TRex's imix: sizes without the FCS, weights
MAX_SIZE = 1518  # without the FCS, as --size
MAX_SIZES = 16
MAX_CYCLE = 10_000  # frames in a cycle (netassay-gen's limit too)
FCS_BYTES = 4  # testbed.linerate's, which this layer cannot import
L1_EXTRA_BYTES = 8 + 12  # preamble and start-of-frame delimiter, inter-frame gap

Mix = tuple[tuple[int, int], ...]  # (size without FCS, weight), in the given order


def _bad(text: str, why: str) -> UsageError:
    return UsageError(
        f"--imix {text}", why,
        "give 'simple' or SIZE:WEIGHT pairs (sizes without the FCS, as --size counts), "
        "e.g. --imix 64:7,590:4,1514:1",
    )  # fmt: skip


def parse_imix(text: str, ip_version: int) -> Mix:
    """The mix ``text`` names for frames of ``ip_version``; UsageError (one line) for a
    mix that does not parse or a size that cannot be sent."""
    smallest = min_frame_bytes(ip_version)
    text = str(text).strip()
    if text.lower() == "simple":
        return tuple((max(size, smallest), w) for size, w in SIMPLE)
    out: list[tuple[int, int]] = []
    for part in (p.strip() for p in text.split(",")):
        size_text, _, weight_text = (t.strip() for t in part.partition(":"))
        if not all(t.isascii() and t.isdigit() for t in (size_text, weight_text)):
            raise _bad(text, f"'{part}' is not SIZE:WEIGHT (whole numbers)")
        size, weight = int(size_text), int(weight_text)  # stripped: int() strips less
        if not smallest <= size <= MAX_SIZE:
            raise _bad(
                text, f"{size} bytes cannot be sent over IPv{ip_version} ({smallest}..{MAX_SIZE})"
            )
        if weight < 1:
            raise _bad(text, f"the weight of {size} is {weight} (weights are 1 or more)")
        if size in (s for s, _ in out):
            raise _bad(text, f"{size} is given twice")
        out.append((size, weight))
    if len(out) > MAX_SIZES or sum(w for _, w in out) > MAX_CYCLE:
        raise _bad(text, f"at most {MAX_SIZES} sizes and {MAX_CYCLE} frames in its cycle")
    return tuple(out)


def from_spec(text: str) -> Mix:
    """A mix from its ``spec`` (as a trial stores it)."""
    pairs = (p.split(":") for p in text.split(","))
    return tuple((int(size), int(w)) for size, w in pairs)


def spec(mix: Mix) -> str:
    """The mix as netassay-gen's ``--imix`` takes it: ``64:7,590:4,1514:1``."""
    return ",".join(f"{size}:{w}" for size, w in mix)


def cycle(mix: Mix) -> list[int]:
    """The sizes of one cycle in the order netassay-gen sends them (smooth weighted
    round robin, ties to the size given first; ``gen/src/mix.rs``)."""
    total = sum(w for _, w in mix)
    credit = [0] * len(mix)
    out = []
    for _ in range(total):
        credit = [c + w for c, (_, w) in zip(credit, mix, strict=True)]
        i = credit.index(max(credit))
        credit[i] -= total
        out.append(mix[i][0])
    return out


def sent_per_size(mix: Mix, total: int) -> dict[int, int]:
    """Frames of each size among the first ``total`` frames of a run."""
    order = cycle(mix)
    whole, rest = divmod(total, len(order))
    out = {size: w * whole for size, w in mix}
    for size in order[:rest]:
        out[size] += 1
    return out


def mean_frame_bytes(mix: Mix) -> float:
    """The mean frame size of the mix (without the FCS), weighted."""
    return sum(size * w for size, w in mix) / sum(w for _, w in mix)


def bits_per_frame(mix: Mix, layer: int) -> float:
    """Bits a mean frame of the mix takes at layer 2 (with its FCS) or layer 1 (also the
    preamble, delimiter and inter-frame gap): a frame rate times this is the bit rate."""
    extra = FCS_BYTES + (L1_EXTRA_BYTES if layer == 1 else 0)
    return 8 * (mean_frame_bytes(mix) + extra)
