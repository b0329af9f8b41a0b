"""The certificates of a cluster: one CA of its own, and a certificate and key for the
scheduler, the workers and the clients (the coordinators), for Dask's mutual TLS.

``make(DIR)`` writes, in ``DIR`` (mode 0700)::

    ca.pem                          the CA's certificate: every party trusts it alone
    scheduler.pem  scheduler.key    the scheduler's
    worker.pem     worker.key       every worker's (each testbed host)
    client.pem     client.key       the coordinators' ('campaign run')
    ca/ca.key                       the CA's key, in a folder of its own (0700)

Keys are EC P-256 and written 0600. The CA's key signs the three certificates here
and is needed by nothing that runs: copy ``DIR`` without ``ca/`` to the other hosts.
Every certificate names the hosts given in its subject alternative names; Dask checks
the chain (both ways), not the names.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.errors import UsageError

ROLES = ("scheduler", "worker", "client")
CA_CERT = "ca.pem"
CA_DIR = "ca"
CA_KEY = f"{CA_DIR}/ca.key"
DEFAULT_HOSTS = ("localhost", "127.0.0.1")
DEFAULT_DAYS = 365
_NO_USAGE = {  # x509.KeyUsage's arguments, each False
    k: False
    for k in (
        "digital_signature", "content_commitment", "key_encipherment", "data_encipherment",
        "key_agreement", "key_cert_sign", "crl_sign", "encipher_only", "decipher_only",
    )
}  # fmt: skip


def cert_file(role: str) -> str:
    return f"{role}.pem"


def key_file(role: str) -> str:
    return f"{role}.key"


def files() -> list[str]:
    """Every file ``make`` writes, relative to its folder."""
    return [CA_CERT, CA_KEY] + [f(r) for r in ROLES for f in (cert_file, key_file)]


@dataclass(frozen=True)
class Made:
    """What ``make`` wrote: the folder, the hosts named, the days each is valid."""

    folder: Path
    hosts: tuple[str, ...]
    days: int
    not_after: str  # UTC, ISO 8601


def _refuse_overwrite(folder: Path, force: bool) -> None:
    there = [f for f in files() if (folder / f).exists()]
    if there and not force:
        raise UsageError(
            f"{folder} already holds cluster certificates ({there[0]})",
            "making new ones would lock out every host that has the old ones",
            "pick another folder, or add --force to replace them",
        )


def _check(hosts: tuple[str, ...], days: int) -> None:
    if not 1 <= days <= 3650:
        raise UsageError(f"bad --days {days}", "a certificate is valid 1..3650 days", "e.g. 365")
    for h in hosts:
        if not h or any(c.isspace() or c in "/:@" for c in h):
            raise UsageError(f"bad --host '{h}'", "a host name or an IP address", "e.g. lab1")


def _names(hosts: tuple[str, ...]) -> list[Any]:
    from cryptography import x509  # deferred: cryptography, only where certificates are made

    out: list[Any] = []
    for h in hosts:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            out.append(x509.DNSName(h))
    return out


def _key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec  # deferred: cryptography

    return ec.generate_private_key(ec.SECP256R1())


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to ``path`` created with ``mode`` (never readable by others first)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)  # whatever the umask


def _pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser  # deferred: cryptography

    pem: bytes = key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())
    return pem


def _builder(subject: str, issuer: str, key: Any, days: int) -> Any:
    from cryptography import x509  # deferred: cryptography
    from cryptography.x509.oid import NameOID  # deferred: cryptography

    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))  # a host's clock a little behind
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
    )


def _ca(days: int) -> tuple[Any, Any]:
    from cryptography import x509  # deferred: cryptography
    from cryptography.hazmat.primitives import hashes  # deferred: cryptography

    key = _key()
    usage = x509.KeyUsage(**{**_NO_USAGE, "key_cert_sign": True, "crl_sign": True})
    cert = (
        _builder("netassay cluster CA", "netassay cluster CA", key, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage, critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(role: str, ca_key: Any, ca: Any, hosts: tuple[str, ...], days: int) -> tuple[Any, Any]:
    from cryptography import x509  # deferred: cryptography
    from cryptography.hazmat.primitives import hashes  # deferred: cryptography
    from cryptography.x509.oid import ExtendedKeyUsageOID as EKU  # deferred: cryptography

    key = _key()
    usage = x509.KeyUsage(**{**_NO_USAGE, "digital_signature": True, "key_agreement": True})
    aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    cert = (  # every role both listens and connects (workers talk to each other)
        _builder(f"netassay {role}", "netassay cluster CA", key, days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage([EKU.SERVER_AUTH, EKU.CLIENT_AUTH]), False)
        .add_extension(x509.SubjectAlternativeName(_names(hosts)), False)
        .add_extension(aki, False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def make(
    folder: Path,
    hosts: tuple[str, ...] = DEFAULT_HOSTS,
    days: int = DEFAULT_DAYS,
    force: bool = False,
) -> Made:
    """A CA and the scheduler's, worker's and client's certificates in ``folder``."""
    from cryptography.hazmat.primitives.serialization import Encoding  # deferred: cryptography

    hosts = tuple(dict.fromkeys(hosts or DEFAULT_HOSTS))
    _check(hosts, days)
    _refuse_overwrite(folder, force)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    (folder / CA_DIR).mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder / CA_DIR, 0o700)
    ca_key, ca = _ca(days)
    _write(folder / CA_KEY, _pem_key(ca_key), 0o600)
    _write(folder / CA_CERT, ca.public_bytes(Encoding.PEM), 0o644)
    for role in ROLES:
        key, cert = _leaf(role, ca_key, ca, hosts, days)
        _write(folder / key_file(role), _pem_key(key), 0o600)
        _write(folder / cert_file(role), cert.public_bytes(Encoding.PEM), 0o644)
    return Made(folder, hosts, days, ca.not_valid_after_utc.isoformat(timespec="seconds"))


def describe(m: Made) -> str:
    """What ``make`` wrote, and what goes where."""
    f = m.folder
    return "\n".join(
        [
            f"cluster certificates in {f} (EC P-256, valid {m.days} days, until {m.not_after})",
            f"  hosts named: {', '.join(m.hosts)}",
            f"  CA: {f / CA_CERT}; its key {f / CA_KEY} (keep it here: nothing that runs needs it)",
            *(f"  {r}: {f / cert_file(r)}, {f / key_file(r)}" for r in ROLES),
            f"  copy {f} without {CA_DIR}/ to each testbed host, e.g. "
            f"rsync -a --exclude {CA_DIR}/ {f}/ HOST:{f}/",
        ]
    )
