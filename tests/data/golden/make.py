"""Make the golden store once (root: it measures on real testbeds), then the outputs the
golden test holds every later netassay to, byte for byte.

    sudo .venv/bin/python tests/data/golden/make.py           # store.db, campaign.db, outputs
    .venv/bin/python tests/data/golden/make.py --outputs      # outputs only, from the stores
    sudo .venv/bin/python tests/data/golden/make.py --add flood  # one more experiment, outputs

store.db holds the PASTRAMI and MonIPE data and one iperf3 file imported, and one
experiment of each method measured on the embedded testbed (a sweep and a search on a
router capped at 100 kpps, an rtt measurement, an acceptance test, three floods of that
router: its MRR; a soak of it at 120 kpps, above its cap; a quick doctor run; a TCP
cell, reno over the 20 ms path with random loss 1e-3; a batching run with a 500 us
flush timeout; back-to-back bursts through the kernel router; its recovery from 110% of
a 100 kpps cap; a reconfiguration that adds an nft table under 50 kpps; a sweep with
--latency of the capped router, each trial's one-way latency histogram kept);
campaign.db a small sweep campaign over two caps. ``--add COMMAND`` measures the one
experiment of that command into the store as it is (a method's experiment added
later; ``--add latency``: the sweep labelled "golden latency"), leaving every other
experiment as it was. The stores are committed and never
remade unless their schema must change: the outputs are what netassay says of them.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import DATA  # noqa: E402  # the real data's one setting, NETASSAY_DATA

REAL = DATA or Path("NETASSAY_DATA-is-not-set")  # measure() refuses to run without it
STORE, CAMPAIGN = HERE / "store.db", HERE / "campaign.db"

MEASURE = [
    ["import", "pastrami", str(REAL / "pastrami"), "--db", "{db}"],
    ["import", "monipe", str(REAL / "monipe"), "--db", "{db}", "--contract", "10G",
     "--layer", "payload"],
    ["import", "iperf3", str(ROOT / "tests/data/iperf3/udp-50M-server.json"), "--db", "{db}",
     "--contract", "50M", "--layer", "payload"],
    ["sweep", "--rates", "60k,90k,120k,150k", "--runs", "2", "--duration", "0.5s",
     "--settle", "0.2s", "--sut-cap", "100k", "--name", "gold", "--label", "golden sweep",
     "--db", "{db}"],
    ["search", "--max-load", "150k", "--min-load", "20k", "--sut-cap", "100k",
     "--initial-duration", "0.5s", "--final-duration", "0.5s", "--duration-sum", "1s",
     "--width", "5%", "--name", "gold", "--label", "golden search", "--db", "{db}"],
    ["rtt", "--path", "bridge", "--probe-rate", "1k", "--count", "300", "--runs", "3",
     "--name", "goldr", "--label", "golden rtt", "--db", "{db}"],
    ["accept", "--contract", "100M", "--embedded", "--runs", "2", "--duration", "2s",
     "--no-ramp", "--name", "golda", "--label", "golden accept", "--db", "{db}"],
    ["flood", "--sut", "router", "--sut-cap", "100k", "--duration", "1s", "--runs", "3",
     "--name", "goldf", "--label", "golden flood", "--db", "{db}"],
    ["soak", "--sut", "router", "--sut-cap", "100k", "--rate", "120k", "--duration", "4s",
     "--segment-length", "2s", "--name", "golds", "--label", "golden soak", "--db", "{db}"],
    ["doctor", "--quick", "--name", "goldd", "--label", "golden doctor", "--db", "{db}"],
    ["tcp", "--cc", "reno", "--delay", "20ms", "--loss", "1e-3", "--runs", "2", "--duration",
     "2s", "--name", "goldt", "--label", "golden tcp", "--db", "{db}"],
    ["batching", "--gro", "on", "--flush", "500us", "--defer", "100", "--probe-rate", "10k",
     "--count", "1000", "--runs", "2", "--name", "goldb", "--label", "golden batching",
     "--db", "{db}"],
    ["burst", "--sut", "router", "--tests", "2", "--max-burst", "20000", "--wait", "0.2s",
     "--throughput", "100k", "--name", "goldk", "--label", "golden burst", "--db", "{db}"],
    ["recovery", "--sut", "router", "--sut-cap", "100k", "--throughput", "100k",
     "--overload-time", "1s", "--recover-time", "0.5s", "--trials", "2", "--wait", "0.2s",
     "--name", "goldv", "--label", "golden recovery", "--db", "{db}"],
    ["reconfig", "--sut", "router", "--rate", "50k", "--duration", "1s", "--at", "0.3s",
     "--trials", "2", "--wait", "0.2s", "--change", "nft add table inet goldc", "--undo",
     "nft delete table inet goldc", "--name", "goldg", "--label", "golden reconfig",
     "--db", "{db}"],
    ["sweep", "--latency", "--rates", "30k,60k,90k", "--runs", "2", "--duration", "0.5s",
     "--settle", "0.2s", "--sut-cap", "100k", "--name", "goldl", "--label", "golden latency",
     "--db", "{db}"],
]  # fmt: skip
CAMPAIGN_FILE = HERE / "campaign.toml"

# what the golden test runs on each store, and the file each output is kept in
OUTPUTS = [
    (STORE, ["assess", "{db}", "--json"], "store-assess.jsonl"),
    (STORE, ["assess", "{db}", "--json", "--mode", "published"], "store-assess-published.jsonl"),
    (STORE, ["compare", "--db", "{db}", "--json"], "store-compare.json"),
    (STORE, ["export", "--db", "{db}", "--format", "csv"], "store-export.csv"),
    (STORE, ["export", "--db", "{db}", "--format", "jsonl"], "store-export.jsonl"),
    (CAMPAIGN, ["assess", "{db}", "--json"], "campaign-assess.jsonl"),
    (CAMPAIGN, ["compare", "--db", "{db}", "--json"], "campaign-compare.json"),
    (
        CAMPAIGN,
        ["compare", "--db", "{db}", "--json", "--by", "sut_cap"],
        "campaign-compare-by.json",
    ),
    (CAMPAIGN, ["export", "--db", "{db}", "--format", "jsonl"], "campaign-export.jsonl"),
]


def netassay(args: list[str], db: Path, ok: tuple[int, ...] = (0,)) -> bytes:
    """The CLI's output, run in this folder on the store by its name (outputs that name
    the store are the same wherever the checkout is)."""
    argv = [sys.executable, "-m", "netassay", *(a.replace("{db}", db.name) for a in args)]
    cp = subprocess.run(argv, capture_output=True, timeout=900, cwd=HERE)
    if cp.returncode not in ok:
        sys.exit(f"{' '.join(argv)}: exit {cp.returncode}\n{cp.stderr.decode()}")
    return cp.stdout


def add(command: str) -> None:
    """Measure the experiment of ``command`` (its MEASURE entry, or the one labelled
    "golden COMMAND") into store.db as it is."""
    args = next(a for a in MEASURE if a[0] == command or _label(a) == f"golden {command}")
    print("netassay", " ".join(args), flush=True)
    netassay(args, STORE)


def _label(args: list[str]) -> str | None:
    return args[args.index("--label") + 1] if "--label" in args else None


def measure() -> None:
    if DATA is None:
        sys.exit("make.py: the store imports the real PASTRAMI and MonIPE data: set NETASSAY_DATA")
    for db in (STORE, CAMPAIGN):
        for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            p.unlink(missing_ok=True)
    for args in MEASURE:
        print("netassay", " ".join(args), flush=True)
        netassay(args, STORE, ok=(0, 9))  # a search that hits its cap still stores
    args = ["campaign", "run", str(CAMPAIGN_FILE), "--db", "{db}", "--name", "goldc"]
    print("netassay", " ".join(args), flush=True)
    netassay(args, CAMPAIGN)


def kept(name: str) -> Path:
    """Where an output is kept: large ones gzip-compressed (no time in the header)."""
    return HERE / (name + ".gz" if name.startswith(BIG) else name)


BIG = ("store-export", "campaign-export")  # outputs of a few hundred kilobytes or more


def read_kept(name: str) -> bytes:
    data = kept(name).read_bytes()
    return gzip.decompress(data) if kept(name).suffix == ".gz" else data


def outputs() -> None:
    for db, args, name in OUTPUTS:
        out = netassay(args, db)
        kept(name).write_bytes(gzip.compress(out, mtime=0) if name.startswith(BIG) else out)
        print(f"{kept(name).name}: {len(out)} bytes")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outputs", action="store_true", help="only the outputs, from the stores")
    ap.add_argument(
        "--add", metavar="COMMAND",
        choices=[*(a[0] for a in MEASURE if a[0] != "import"), "latency"],
        help="measure only this command's experiment into store.db, then the outputs",
    )  # fmt: skip
    opts = ap.parse_args()
    if opts.add:
        add(opts.add)
    elif not opts.outputs:
        measure()
    outputs()
