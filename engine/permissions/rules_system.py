"""Rules for programs that inspect or change the machine itself: network configuration,
mounts, processes, the kernel's log and the system's account databases.

Showing the machine's state is a read like ``ps``; what changes it (an address, a route, the
console's log level) asks; a database that holds password hashes is a read outside the
workspace.
"""

from __future__ import annotations

import re

from engine.permissions.effect import Effect, Rule, parse_opts, plain
from engine.permissions.words import Word

_F = frozenset

# ---------------------------------------------------------------- ip (iproute2)

_IP_VALUE_OPTIONS = _F({"n", "netns", "f", "family", "l", "loops", "rc", "rcvbuf"})
"""``ip`` options that take the next word (``ip -n NS link``, ``ip -f inet addr``)."""
_IP_BATCH = _F({"b", "batch"})
"""``ip -b FILE`` runs the commands a file holds: not shown here."""
_IP_SHOW = _F({"show", "list", "lst", "ls", "sh", "get", "help", "identify", "pids"})
"""Commands that print; an object with no command shows too (``ip addr``, ``ip -br link``).
Shorter prefixes (``s``) are left out: ip resolves them per object, ``s`` can mean ``set``."""
_IP_WATCH = _F({"monitor", "mon", "help"})
"""Objects that only print, whatever follows (``ip monitor all``)."""


def _ip(e: Effect, args: list[Word]) -> None:
    """``ip addr``, ``ip -j route get 1.1.1.1`` show; ``ip link set``, ``ip route add``,
    ``ip addr flush`` change the machine's network; ``ip netns exec NS CMD`` runs a program."""
    words: list[Word] = []
    i = 0
    while i < len(args):
        v = args[i].value
        if v is None:
            e.add("exec", "ip with an argument only known at run time")
            return
        name = v.lstrip("-")
        if v.startswith("-") and name in _IP_BATCH:
            e.add("exec", "ip -batch runs the commands a file holds")
            return
        if v.startswith("-"):
            i += 2 if name in _IP_VALUE_OPTIONS else 1
            continue
        words.append(args[i])
        i += 1
    values = [w.value or "" for w in words]
    if not values or values[0] in _IP_WATCH:
        return
    if values[0].startswith("net") and values[1:2] == ["exec"]:
        e.add("exec", "ip netns exec runs a program in a network namespace")
    elif len(values) > 1 and values[1] not in _IP_SHOW:
        e.add("exec", f"ip {values[0]} {values[1]} changes the machine's network")


# ---------------------------------------------------------------- kernel log, mounts, accounts

_DMESG_CHANGES = _F({"-C", "--clear", "-c", "--read-clear", "-D", "--console-off", "-E",
                     "--console-on", "-n", "--console-level"})


def _dmesg(e: Effect, args: list[Word]) -> None:
    """``dmesg`` reads the kernel's log (the system's, outside the workspace, as
    ``journalctl``); ``-c``/``-C`` clear it and ``-n``/``-D``/``-E`` change the console."""
    o = parse_opts(args, "fFlns", _F({"--facility", "--file", "--level", "--console-level",
                                       "--buffer-size", "--color", "--time-format", "--since",
                                       "--until"}))
    if any(a.value is not None and a.value.split("=")[0] in _DMESG_CHANGES for a in args) or \
            o.has(*_DMESG_CHANGES):
        e.add("write", "dmesg clears the kernel log or changes the console")
    e.reads.extend(o.all("-F", "--file") or [Word.of("/dev/kmsg")])


def _findmnt(e: Effect, args: list[Word]) -> None:
    """``findmnt`` lists mounts like ``df``; ``-F``/``--tab-file`` names a file it reads.
    Positionals are mount points and devices, not files it opens."""
    o = parse_opts(args, "FtOoSTNwd", _F({"--tab-file", "--types", "--options",
                                              "--output", "--source", "--target", "--task",
                                              "--poll", "--timeout", "--direction"}))
    e.reads.extend(o.all("-F", "--tab-file"))


_SECRET_DATABASES = _F({"shadow", "gshadow"})
_RESOLVED = _F({"hosts", "ahosts", "ahostsv4", "ahostsv6", "networks"})
"""getent databases a name is looked up in through DNS when the local files lack it."""
_LOCAL_NAME = re.compile(r"^(?:localhost|ip6-localhost|ip6-loopback|[\w.-]*\.localhost|"
                         r"127\.0\.0\.1|::1)$", re.I)
"""Names every system answers from ``/etc/hosts`` (or by RFC 6761) without asking DNS."""


def _getent(e: Effect, args: list[Word]) -> None:
    """``getent hosts NAME``, ``getent passwd USER`` print one entry of a system database;
    ``shadow`` and ``gshadow`` hold password hashes (a read outside the workspace); a host
name looked up goes to DNS, a channel out of the machine."""
    o = parse_opts(args, "s", _F({"--service"}))
    database = o.positionals[0].value if o.positionals else ""
    if database is None or database in _SECRET_DATABASES:
        e.reads.append(Word.of(f"/etc/{database or 'shadow'}"))
    if database in _RESOLVED and any(not _LOCAL_NAME.match(w.value or "x")
                                     for w in o.positionals[1:]):
        e.add("network", f"getent {database} NAME asks DNS (the name leaves the machine)")


def _sysctl(e: Effect, args: list[Word]) -> None:
    """``sysctl vm.max_map_count``, ``sysctl -a`` print kernel settings; ``-w``, ``NAME=V``,
    ``-p``/``--system``/``--load`` set them (the whole machine's)."""
    words = [w.value for w in args]
    if None in words or any("=" in (v or "") or v in ("-w", "--write", "-p", "--load",
                                                        "--system", "-f") for v in words):
        e.add("exec", "sysctl sets kernel parameters")


def _ldconfig(e: Effect, args: list[Word]) -> None:
    """``ldconfig -p`` prints the linker's cache of libraries; any other use rebuilds it
    (``/etc/ld.so.cache``, which decides what every program loads) or reads a file named."""
    if not args or not all(w.value in ("-p", "--print-cache", "--version", "-V", "--help",
                                       "-?", "--usage") for w in args):
        e.add("exec", "ldconfig rebuilds the linker's cache of libraries")


def _fuser(e: Effect, args: list[Word]) -> None:
    """``fuser -v FILE``, ``fuser -n tcp 8000`` show which processes use a file or port;
    ``-k`` (in any cluster of letters, or ``--kill``) sends them a signal."""
    kills = any(w.value is None or w.value == "--kill" or re.fullmatch(
        r"-[a-zA-Z]*k[a-zA-Z]*", w.value) for w in args)
    if kills:
        e.add("write", "fuser -k stops the processes it finds")
        e.at_least("ask", "")


_ANALYZE_SHOWS = _F({"calendar", "timestamp", "timespan", "time", "blame", "critical-chain",
                     "unit-paths", "condition", "syscall-filter", "capability", "exit-status"})
"""``systemd-analyze`` verbs that compute or print boot facts (not ``log-level X``, ``dump``
of every unit's settings, ``security`` or ``verify`` loading unit files)."""


def _systemd_analyze(e: Effect, args: list[Word]) -> None:
    verb = next((w.value for w in args if not (w.value or "-").startswith("-")), None)
    if verb not in _ANALYZE_SHOWS or any(w.value is None for w in args):
        e.add("exec", f"systemd-analyze {verb or ''} is not modelled".replace("  ", " "))
        e.at_least("ask", "")


# ---------------------------------------------------------------- GPUs and the firewall

_GPU_SHOWS = _F({"-L", "--list-gpus", "-q", "--query", "-x", "--xml-format", "-u", "--unit",
                 "-h", "--help", "--version", "-B", "--list-excluded-gpus"})
_GPU_SHOW_VALUES = _F({"-i", "--id", "-d", "--display", "-l", "--loop", "-lms", "--loop-ms",
                       "--format", "--query-gpu", "--query-compute-apps",
                       "--query-accounted-apps", "--query-retired-pages",
                       "--query-supported-clocks", "--query-remapped-rows"})
_GPU_VIEWS = _F({"topo", "dmon", "pmon", "nvlink"})
"""``nvidia-smi`` subcommands that only print (``topo -m``, ``dmon -c 5``)."""


def _nvidia_smi(e: Effect, args: list[Word]) -> None:
    """``nvidia-smi`` alone, with query options or a viewing subcommand prints the GPUs'
    state, as ``ps`` does processes; any other option (``-pm``, ``-pl``, ``-r``, ``-c``,
    ``-f FILE``) changes a GPU's settings or writes a file: asked."""
    words = [w.value for w in args]
    if words[:1] and words[0] in _GPU_VIEWS:
        if all(w is not None and w not in ("-f", "--filename") for w in words):
            return
    else:
        i = 0
        while i < len(words):
            w = words[i]
            name = (w or "").partition("=")[0]
            if w in _GPU_SHOWS or (name in _GPU_SHOW_VALUES and "=" in (w or "")):
                i += 1
            elif w in _GPU_SHOW_VALUES:
                i += 2
            else:
                break
        else:
            return
    e.add("exec", "nvidia-smi changes a GPU's settings (or writes a file)")


_UFW_SHOWS = (["status"], ["status", "verbose"], ["status", "numbered"], ["show", "raw"],
              ["show", "added"], ["show", "listening"], ["app", "list"], ["version"],
              ["--version"], ["help"], ["--help"])
_UFW_DOWN = _F({"disable", "reset", "delete"})


def _ufw(e: Effect, args: list[Word]) -> None:
    """``ufw status`` shows the firewall; ``disable``, ``reset`` or ``delete`` opens the
    machine (destructive); any other verb changes its rules (asked)."""
    words = [w.value for w in args if w.value != "--dry-run"]
    if words in _UFW_SHOWS or (len(words) == 3 and words[:2] == ["app", "info"]):
        return
    if words[:1] and words[0] in _UFW_DOWN and "--dry-run" not in [w.value for w in args]:
        e.add("destructive", f"ufw {words[0]} takes the firewall's rules down")
    else:
        e.add("exec", "ufw changes the machine's firewall")


RULES: dict[str, Rule] = {
    "nvidia-smi": _nvidia_smi, "ufw": _ufw,
    "ip": _ip, "ldconfig": _ldconfig, "sysctl": _sysctl, "dmesg": _dmesg,
    "findmnt": _findmnt, "getent": _getent, "fuser": _fuser,
    "systemd-analyze": _systemd_analyze, "pg_config": plain(),
    **dict.fromkeys(("top", "pstree", "lsns", "lslocks", "lsipc", "lsmem", "users", "hostid",
                     "pwdx", "pmap", "systemd-detect-virt", "lsb_release"), plain()),
}
