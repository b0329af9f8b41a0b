"""Who may talk to a campaign's cluster: the scheduler, its workers (root, on testbed
hosts) and the coordinators authenticate each other with mutual TLS, Dask's own
(``distributed.security.Security``), from the certificates ``netassay cluster certs``
makes (``campaign.certs``).

Plaintext is refused: a ``tcp://`` address is one line and exit 2 before anything
starts; ``--insecure`` allows it toward a loopback address only (127.0.0.0/8, ::1,
localhost), and the experiments run that way record it in their environment
(``cluster_transport``). A ``tls://`` address needs the certificates (``--tls-dir``, or
``tls_dir`` in the config file's [cluster] section).
"""

from __future__ import annotations

import ipaddress
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from netassay.campaign import certs
from netassay.errors import UsageError

TLS = "tls"
INSECURE = "tcp-insecure-loopback"
IN_PROCESS = "in-process"  # the LocalCluster of 'campaign run' without --scheduler
DEFAULT_LISTEN = "tls://127.0.0.1:8786"
DEFAULT_DASHBOARD = "127.0.0.1:8787"
MAKE_CERTS = "make certificates with 'netassay cluster certs DIR' and pass --tls-dir DIR"


@dataclass(frozen=True)
class Access:
    """How one party reaches (or serves) the cluster: its address, its transport
    (``tls`` or ``tcp-insecure-loopback``) and, over TLS, the folder of certificates."""

    address: str
    host: str
    port: int
    transport: str
    tls_dir: Path | None = None

    def security(self, role: str) -> Any:
        """Dask's Security for ``role`` (scheduler, worker, client): mutual TLS with
        encryption required, or none on an insecure loopback."""
        from distributed.security import Security  # deferred: Dask (1 s)

        if self.tls_dir is None:
            return Security(require_encryption=False)
        d = self.tls_dir
        cert, key = str(d / certs.cert_file(role)), str(d / certs.key_file(role))
        return Security(
            tls_ca_file=str(d / certs.CA_CERT),
            require_encryption=True,
            **{f"tls_{role}_cert": cert, f"tls_{role}_key": key},
        )


def _split(address: str, what: str) -> tuple[str, str, int]:
    """(scheme, host, port) of ``tls://HOST:PORT``; a bare HOST:PORT is tcp (Dask's)."""
    text = address if "://" in address else f"tcp://{address}"
    try:
        u = urlsplit(text)
        port = u.port
    except ValueError as exc:
        raise UsageError(f"bad {what} '{address}'", str(exc), "e.g. tls://HOST:8786") from exc
    if not u.hostname or port is None or u.path not in ("", "/"):
        raise UsageError(
            f"bad {what} '{address}'", "it is SCHEME://HOST:PORT", "e.g. tls://HOST:8786"
        )
    return u.scheme, u.hostname, port


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or the name localhost (no other name is looked up)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _tls_files(tls_dir: Path | None, role: str, address: str) -> Path:
    """The folder of ``role``'s certificates, checked: present, its key not readable by
    others."""
    if tls_dir is None:
        raise UsageError(
            f"{address} needs certificates",
            "the cluster authenticates every party with mutual TLS",
            f"{MAKE_CERTS} (or tls_dir in the config file's [cluster])",
        )
    for name in (certs.CA_CERT, certs.cert_file(role), certs.key_file(role)):
        if not (tls_dir / name).is_file():
            raise UsageError(
                f"no {tls_dir / name}", f"the {role}'s certificates are not there", MAKE_CERTS
            )
    key = tls_dir / certs.key_file(role)
    if key.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(
            f"{key} can be read by others", "a key must be its owner's alone", f"chmod 600 {key}"
        )
    return tls_dir


def access(
    address: str, tls_dir: Path | None, insecure: bool, role: str, what: str = "--scheduler"
) -> Access:
    """How ``role`` may use ``address``, or one line (exit 2) saying why not and what to
    do: TLS with certificates, or plaintext with ``insecure`` toward loopback only."""
    scheme, host, port = _split(address, what)
    address = f"{scheme}://{_hostport(host, port)}"
    if scheme == TLS:
        return Access(address, host, port, TLS, _tls_files(tls_dir, role, address))
    if scheme != "tcp":
        raise UsageError(
            f"{what} {address}: unknown transport '{scheme}'", "", "use tls://HOST:PORT"
        )
    if not insecure:
        raise UsageError(
            f"refused plaintext {what} {address}",
            "a netassay worker runs as root and runs what the scheduler sends",
            f"use tls://{_hostport(host, port)} ({MAKE_CERTS}), or --insecure on loopback",
        )
    if not is_loopback(host):
        raise UsageError(
            f"refused --insecure toward {address}",
            "plaintext is allowed on loopback only (127.0.0.0/8, ::1, localhost)",
            f"use tls://{_hostport(host, port)} ({MAKE_CERTS})",
        )
    return Access(address, host, port, INSECURE)


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def serve_scheduler(a: Access, dashboard: str) -> None:
    """Run a Dask scheduler at ``a`` until it is stopped; its dashboard at ``dashboard``
    (loopback by default: Dask's dashboard has no authentication)."""
    import asyncio  # deferred: with Dask, only where a scheduler runs

    from distributed import Scheduler  # deferred: Dask (1 s)

    _, dash_host, _ = _split(f"http://{dashboard}", "--dashboard")

    async def main() -> None:
        async with Scheduler(
            host=a.host,
            port=a.port,
            protocol=a.address.split("://", 1)[0],
            security=a.security("scheduler"),
            dashboard_address=dashboard,
        ) as s:
            http = f"http://{_hostport(dash_host, s.http_server.port)}/status"
            sys.stderr.write(f"netassay scheduler: {s.address} ({a.transport}), dashboard {http}\n")
            sys.stderr.flush()
            await s.finished()

    asyncio.run(main())
