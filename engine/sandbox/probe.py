"""Can commands be confined here? Find ``bwrap`` and run a probe command under it.

The answer is cached per ``bwrap`` path for the life of the process: a run asks once at its
start, and ``engine sandbox check`` asks with ``fresh=True``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache

from engine.sandbox.bwrap import MountPlan, Redirect, bwrap_argv

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 10.0
PROBE_TMP_BYTES = 16 * 1024 * 1024
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"


@dataclass(frozen=True, slots=True)
class Probe:
    """Whether confinement works, and if not, why and what to do."""

    ok: bool
    reason: str
    bwrap: str | None = None
    version: str = ""
    seconds: float = 0.0
    """How long the probe command took under bwrap (its start-up cost)."""
    sizes_tmp: bool = False
    """This bwrap takes ``--size`` for a tmpfs (the bound on the private ``/tmp``)."""

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "reason": self.reason, "bwrap": self.bwrap,
                "version": self.version, "probe_s": round(self.seconds, 4)}


def probe(fresh: bool = False) -> Probe:
    """Find ``bwrap`` on ``PATH`` and confine a probe command with the flags every command gets."""
    path = shutil.which("bwrap")
    if path is None:
        return Probe(False, f"bwrap not found on PATH; {INSTALL_HINT}")
    if fresh:
        _probe_path.cache_clear()
    return _probe_path(path)


@lru_cache(maxsize=4)
def _probe_path(bwrap: str) -> Probe:
    version = _version(bwrap)
    sizes = _takes_size(bwrap)
    with tempfile.TemporaryDirectory(prefix="turnstile-probe-") as ws:
        script = (f"echo ok > {ws}/probe && ! touch /etc/.turnstile-probe 2>/dev/null "
                  "&& ! mount -o remount,rw / 2>/dev/null")
        plan = MountPlan(ws, tmp_size=PROBE_TMP_BYTES if sizes else None)
        argv = bwrap_argv(bwrap, ["/bin/sh", "-c", script], plan, ws)
        started = time.monotonic()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Probe(False, f"{bwrap} could not be run: {exc}", bwrap, version)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            return Probe(False, _explain(done.stderr, done.returncode), bwrap, version, seconds)
        if not os.path.exists(os.path.join(ws, "probe")):
            return Probe(False, "the probe command could not write its workspace", bwrap,
                         version, seconds)
    return Probe(True, f"commands are confined with {bwrap} {version}".strip(), bwrap, version,
                 seconds, sizes)


@lru_cache(maxsize=4)
def mounts_links(bwrap: str) -> bool:
    """Whether ``mountlink`` works under this ``bwrap`` (asked once per process): bwrap gives
    it its capabilities (a setuid bwrap does not unless root starts it; a container may hold
    them back), the kernel mounts a symlink over a file (5.2 and later), and the command after
    it writes through the symlink. Where not, ``.git/config`` stays read-only to commands."""
    source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    own = tuple(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, source))
    with tempfile.TemporaryDirectory(prefix="turnstile-probe-") as ws:
        target = os.path.join(ws, "config")
        folder = os.path.join(ws, "private")
        copy, link = os.path.join(folder, "copy"), os.path.join(folder, "link")
        os.mkdir(folder)
        for path in (target, copy):
            with open(path, "w"):
                pass
        os.symlink(copy, link)
        script = f'[ "$(readlink {target})" = {copy} ] && echo ok > {target}'
        argv = bwrap_argv(bwrap, ["/bin/sh", "-c", script], MountPlan(ws, readable=own), ws,
                          Redirect(folder, ((link, target),)))
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                  check=False)
            with open(copy) as c, open(target) as t:
                ok = done.returncode == 0 and c.read() == "ok\n" and t.read() == ""
        except (OSError, subprocess.TimeoutExpired) as exc:
            logger.info("a symlink cannot be mounted over .git/config here: %s", exc)
            return False
    if not ok:
        logger.info("a symlink cannot be mounted over .git/config here: %s",
                    done.stderr.strip() or f"exit code {done.returncode}")
    return ok


def _version(bwrap: str) -> str:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=5,
                             check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.strip().removeprefix("bubblewrap ").strip()


def _takes_size(bwrap: str) -> bool:
    """Whether ``bwrap --help`` lists ``--size`` (a bounded ``--tmpfs``)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=5,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in done.stdout + done.stderr


def _explain(stderr: str, code: int) -> str:
    """Why bwrap failed, in one line, with the usual cause named."""
    first = (stderr.strip().splitlines() or [f"exit code {code}"])[0]
    lowered = stderr.lower()
    if "namespace" in lowered or "operation not permitted" in lowered:
        return (f"bwrap cannot create namespaces ({first}); user namespaces are disabled or "
                "forbidden here (sysctl kernel.unprivileged_userns_clone=1, "
                "user.max_user_namespaces > 0, or a container that allows them)")
    if code != 0 and not stderr.strip():
        return "the probe ran but a confinement check failed (/ writable or remountable)"
    return f"bwrap failed: {first}"
