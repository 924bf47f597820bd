"""A throw-away PostgreSQL cluster for tests: ``initdb`` into a temporary folder, ``pg_ctl start``
on a free port of 127.0.0.1 (trust authentication, nothing else listens), one database per test.

``initdb`` refuses to run as root, so as root the cluster belongs to the ``postgres`` user and
its commands run through ``runuser``. Missing server binaries fail the tests that need them
with the fix (``scripts/test`` installs the Debian ``postgresql`` package): a store that is
part of the contract is never skipped silently.

Use: the ``pg_cluster`` fixture (one per test session) and ``pg_url`` (a fresh database per
test, as a ``postgresql://`` URL); other helpers start their own with ``PgCluster``.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

RUNUSER = (shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
           or "runuser")
"""``runuser`` lives in /usr/sbin, which a plain user PATH (and CI's) does not include."""

PORT_ATTEMPTS = 5
"""Ports tried: between finding a free port and the server binding it, another process on a
busy machine may take it."""
MISSING = ("PostgreSQL server binaries (initdb, pg_ctl) not found: install the Debian package "
           "`postgresql` (scripts/test does), or set PG_BIN to the folder holding initdb")


def find_bin_dir(pattern: str = "/usr/lib/postgresql/*/bin") -> Path:
    """``$PG_BIN``, else the newest ``/usr/lib/postgresql/*/bin``, else ``initdb`` on PATH."""
    candidates = [os.environ.get("PG_BIN", "")]
    candidates += sorted(glob.glob(pattern),
                         key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit()
                         else 0, reverse=True)
    on_path = shutil.which("initdb")
    candidates.append(str(Path(on_path).parent) if on_path else "")
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    raise RuntimeError(MISSING)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """One running cluster; ``stop`` removes every file it wrote."""

    def __init__(self, settings: Mapping[str, str] | None = None) -> None:
        self.bin = find_bin_dir()
        self.as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="turnstile-pg-"))
        self.root.chmod(0o755)  # the postgres user must reach its folders inside
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.settings = {"listen_addresses": "127.0.0.1", "fsync": "off",
                         "max_connections": "200", **(settings or {})}
        self.started = False

    def _cmd(self, *args: str) -> list[str]:
        return [RUNUSER, "-u", "postgres", "--", *args] if self.as_root else list(args)

    def _run(self, *args: str) -> None:
        proc = subprocess.run(self._cmd(*args), capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}): "
                               f"{proc.stderr.strip() or proc.stdout.strip()}\n{log}")

    def start(self) -> PgCluster:
        for folder in (self.data, self.sock):
            folder.mkdir(mode=0o700)
        self.log.touch()
        if self.as_root:
            for path in (self.data, self.sock, self.log):
                shutil.chown(path, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
        for attempt in range(PORT_ATTEMPTS):
            try:
                self.start_server()
                return self
            except RuntimeError as exc:  # the free port was taken before the server bound it
                if "Address already in use" not in str(exc) or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.port = free_port()
        return self

    def stop_server(self) -> None:
        """Stop the server at once (as a crash would), keeping its data."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w",
                  "stop")
        self.started = False

    def start_server(self) -> None:
        """Start the server again on the same port."""
        options = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
                  "-t", "60", "-o", f"-p {self.port} -k {self.sock} {options}", "start")
        self.started = True

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.started:
                self.stop_server()
        finally:
            self.started = False
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One cluster for the whole session; a missing server fails the test (never a skip)."""
    try:
        cluster = PgCluster()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        cluster.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        cluster.stop()
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A fresh database in the session's cluster, as a ``postgresql://`` URL."""
    return pg_cluster.create_database()
