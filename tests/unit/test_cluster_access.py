"""Who may reach a campaign's cluster: TLS with certificates, plaintext on loopback only
with --insecure; every refusal one line (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netassay.campaign import certs
from netassay.campaign.cluster import INSECURE, TLS, access, is_loopback
from netassay.config import load_config
from netassay.errors import InputError, UsageError


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "localhost", "LOCALHOST"])
def test_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["10.0.0.1", "0.0.0.0", "::", "lab1", "localhost.example"])
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize(
    "address", ["tcp://127.0.0.1:8786", "127.0.0.1:8786", "tcp://[::1]:8786", "tcp://localhost:1"]
)
def test_plaintext_is_refused_and_insecure_allows_loopback(address: str) -> None:
    with pytest.raises(UsageError, match="refused plaintext") as e:
        access(address, None, False, "worker")
    assert "netassay cluster certs DIR" in e.value.line() and e.value.exit_code == 2
    a = access(address, None, True, "worker")
    assert a.transport == INSECURE and a.tls_dir is None and a.address.startswith("tcp://")


@pytest.mark.parametrize("address", ["tcp://10.0.0.1:8786", "tcp://0.0.0.0:8786", "lab:8786"])
def test_insecure_off_loopback_is_refused(address: str) -> None:
    with pytest.raises(UsageError, match="loopback only"):
        access(address, None, True, "client")


@pytest.mark.parametrize("address", ["tls://host", "tls://:8786", "ws://host:1", "tls://h:1/x"])
def test_bad_addresses(address: str) -> None:
    with pytest.raises(UsageError):
        access(address, Path("/nonexistent"), False, "worker")


def test_tls_needs_the_role_s_certificates(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs certificates"):
        access("tls://lab:8786", None, False, "worker")
    with pytest.raises(UsageError, match=r"no .*ca\.pem"):
        access("tls://lab:8786", tmp_path, False, "worker")
    certs.make(tmp_path / "c")
    a = access("tls://lab:8786", tmp_path / "c", True, "worker")  # --insecure changes nothing
    assert (a.transport, a.host, a.port, a.tls_dir) == (TLS, "lab", 8786, tmp_path / "c")
    (tmp_path / "c" / "client.key").unlink()
    with pytest.raises(UsageError, match=r"client\.key"):
        access("tls://lab:8786", tmp_path / "c", False, "client")


def test_the_config_file_s_cluster_section(tmp_path: Path) -> None:
    f = tmp_path / "n.toml"
    f.write_text('[cluster]\ntls_dir = "certs"\n')
    assert load_config(f).cluster.tls_dir == str(tmp_path / "certs")
    f.write_text("[cluster]\ntls_dir = 3\n")
    with pytest.raises(InputError, match=r"n.toml:2: \[cluster\] tls_dir = 3"):
        load_config(f)
