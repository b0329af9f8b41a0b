"""A campaign's cluster lets no one in: a real 'netassay cluster scheduler' and a real
'netassay worker' (processes, on loopback, on ports of their own) run work over mutual
TLS; a client with no certificate, or with one of another CA, is refused and nothing it
asks for runs; plaintext is refused before anything starts (--insecure: loopback only);
'cluster certs' writes its keys 0600, the CA's key apart, and never overwrites.

No namespaces: the work is a file touched on the worker.
"""

from __future__ import annotations

import os
import socket
import ssl
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import netassay_argv

from netassay.campaign import certs

Security = pytest.importorskip("distributed.security").Security


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Proc:
    """A netassay process whose stderr lines a thread collects."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            netassay_argv(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(text):
                    return line
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("".join(self.lines[-20:]))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _client_security(d: Path, ca: Path | None = None) -> object:
    return Security(
        tls_ca_file=str((ca or d) / certs.CA_CERT),
        tls_client_cert=str(d / "client.pem"),
        tls_client_key=str(d / "client.key"),
        require_encryption=True,
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[dict[str, object]]:
    """Certificates of two CAs, a TLS scheduler and a netassay worker (root) of the first."""
    if os.geteuid() != 0:
        pytest.skip("a netassay worker runs as root")
    base = tmp_path_factory.mktemp("tls")
    ours, theirs = base / "ours", base / "theirs"
    certs.make(ours)
    certs.make(theirs)
    address = f"tls://127.0.0.1:{_free_port()}"
    sched = _Proc(
        "cluster", "scheduler", "--listen", address, "--tls-dir", str(ours),
        "--dashboard", f"127.0.0.1:{_free_port()}",
    )  # fmt: skip
    procs = [sched]
    try:
        sched.wait_for("netassay scheduler:")
        worker = _Proc("worker", "--scheduler", address, "--tls-dir", str(ours), "--name", "tlsw")
        procs.append(worker)
        line = worker.wait_for("netassay worker:")
        yield {
            "address": address,
            "ours": ours,
            "theirs": theirs,
            "worker": line.split(" at ")[1].split(",")[0],
            "base": base,
        }
    finally:
        for p in reversed(procs):
            p.stop()


def test_a_tls_scheduler_and_worker_run_work(cluster) -> None:
    from distributed import Client  # deferred: Dask

    marker = cluster["base"] / "ran"
    with Client(cluster["address"], security=_client_security(cluster["ours"]), timeout="10s") as c:
        assert c.submit(Path.touch, marker, resources={"testbed": 1}, pure=False).result(20) is None
        assert [w["name"] for w in c.scheduler_info()["workers"].values()] == ["netassay-tlsw"]
    assert marker.exists()
    assert cluster["worker"].startswith("tls://127.0.0.1:")


@pytest.mark.parametrize("to", ["address", "worker"])
def test_a_certificate_of_another_ca_is_refused_and_nothing_runs(cluster, to) -> None:
    from distributed import Client  # deferred: Dask

    marker = cluster["base"] / f"never-{to}"
    sec = _client_security(cluster["theirs"])
    with pytest.raises(OSError), Client(cluster[to], security=sec, timeout="3s") as c:
        c.submit(Path.touch, marker, pure=False).result(5)  # Dask's comm errors: OSErrors
    # they trust our CA, but the scheduler does not trust theirs
    sec = _client_security(cluster["theirs"], ca=cluster["ours"])
    with pytest.raises(OSError), Client(cluster[to], security=sec, timeout="3s") as c:
        c.submit(Path.touch, marker, pure=False).result(5)
    time.sleep(0.5)
    assert not marker.exists()


def _tls_handshake(address: str, ca: Path) -> None:
    """A TLS connection that trusts the scheduler's CA but shows no certificate, and
    asks to be read (TLS 1.3 ends the handshake of a refused client on its first read)."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        ctx.wrap_socket(raw) as s,
    ):
        s.sendall(b"\0" * 16)
        if not s.recv(1):
            raise ConnectionResetError("closed")


def test_a_client_without_a_certificate_is_refused(cluster) -> None:
    from distributed import Client  # deferred: Dask

    with pytest.raises((ssl.SSLError, ConnectionError)):
        _tls_handshake(cluster["address"], cluster["ours"] / certs.CA_CERT)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _tls_handshake(cluster["worker"], cluster["ours"] / certs.CA_CERT)
    plain = cluster["address"].replace("tls://", "tcp://")
    marker = cluster["base"] / "never-plain"
    with pytest.raises(OSError), Client(plain, timeout="3s") as c:
        c.submit(Path.touch, marker, pure=False).result(5)
    time.sleep(0.5)
    assert not marker.exists()


def _no_worker_started(*args: str, why: str) -> str:
    """The command refused in one line, exit 2, quickly, without importing Dask (no
    worker, no connection); its line."""
    t0 = time.monotonic()
    argv = netassay_argv(*args)
    res = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, timeout=30
    )
    took = time.monotonic() - t0
    assert res.returncode == 2, res.stderr
    imported = [ln.rsplit("|", 1)[-1].strip() for ln in res.stderr.splitlines() if "|" in ln]
    assert "distributed" not in imported and "netassay.cli" in imported
    lines = [ln for ln in res.stderr.splitlines() if not ln.startswith("import time:")]
    assert len(lines) == 1 and why in lines[0], lines
    assert took < 10
    return lines[0]


def test_a_plaintext_scheduler_is_refused() -> None:
    line = _no_worker_started("worker", "--scheduler", "tcp://127.0.0.1:8786", why="refused")
    assert "netassay cluster certs DIR" in line and "--insecure" in line
    _no_worker_started(
        "worker", "--scheduler", "tcp://10.9.8.7:8786", "--insecure", why="loopback only"
    )
    _no_worker_started("worker", "--scheduler", "tls://127.0.0.1:8786", why="certificates")


def test_the_coordinator_refuses_plaintext_too(cli, tmp_path) -> None:
    spec = Path(__file__).resolve().parents[2] / "examples" / "caps.toml"
    db = str(tmp_path / "c.db")
    for args, why in [
        (("--scheduler", "tcp://127.0.0.1:8786"), "refused plaintext"),
        (("--scheduler", "tcp://192.0.2.1:8786", "--insecure"), "loopback only"),
        (("--scheduler", "tls://127.0.0.1:8786"), "needs certificates"),
        (("--insecure",), "--insecure needs --scheduler"),
    ]:
        res = cli("campaign", "run", str(spec), "--db", db, *args, timeout=30)
        assert res.returncode == 2 and why in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not Path(db).exists()


def test_the_config_file_names_the_certificates(cli, tmp_path) -> None:
    cfg = tmp_path / "netassay.toml"
    cfg.write_text('[cluster]\ntls_dir = "certs"\n')
    res = cli("--config", str(cfg), "worker", "--scheduler", "tls://127.0.0.1:8786")
    assert res.returncode == 2, res.stderr
    assert f"no {tmp_path / 'certs' / certs.CA_CERT}" in res.stderr  # read from the file's folder
    cfg.write_text('[cluster]\ntls_folder = "certs"\n')
    res = cli("--config", str(cfg), "worker", "--scheduler", "tls://127.0.0.1:8786")
    assert res.returncode == 3 and "unknown key 'tls_folder' in [cluster]" in res.stderr
    cfg.write_text('[cluster]\ntls_dir = "/srv/certs"\n')
    shown = cli("--config", str(cfg), "config", "show")
    assert '[cluster]\ntls_dir = "/srv/certs"' in shown.stdout, shown.stdout


@pytest.mark.slow
def test_certs_modes_the_ca_key_apart_and_no_overwrite(cli, tmp_path) -> None:
    d = tmp_path / "certs"
    res = cli("cluster", "certs", str(d), "--host", "lab1", "--host", "10.0.0.2", "--days", "30")
    assert res.returncode == 0, res.stderr
    assert "copy" in res.stdout and "without ca/" in res.stdout
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(d) == 0o700 and mode(d / "ca") == 0o700
    assert mode(d / "ca" / "ca.key") == 0o600
    assert sorted(p.name for p in (d / "ca").iterdir()) == ["ca.key"]
    for role in certs.ROLES:
        assert mode(d / f"{role}.key") == 0o600
        assert mode(d / f"{role}.pem") == 0o644
    assert not (d / "ca.key").exists()
    from cryptography import x509  # deferred: cryptography

    cert = x509.load_pem_x509_certificate((d / "worker.pem").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["lab1"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.0.0.2"]
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days == 30
    before = (d / "worker.key").read_bytes()
    again = cli("cluster", "certs", str(d))
    assert again.returncode == 2, again.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and "--force" in again.stderr
    assert (d / "worker.key").read_bytes() == before
    forced = cli("cluster", "certs", str(d), "--force")
    assert forced.returncode == 0 and (d / "worker.key").read_bytes() != before
    (d / "worker.key").chmod(0o644)
    res = cli("worker", "--scheduler", "tls://127.0.0.1:8786", "--tls-dir", str(d))
    assert res.returncode == 2 and "chmod 600" in res.stderr, res.stderr
