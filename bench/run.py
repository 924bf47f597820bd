"""Every benchmark in one invocation, one table, PASS/FAIL against the targets of issue 11.

    pip install -e '.[bench]'
    python bench/run.py [--quick] [--json FILE] [--with tools streaming ...]

Each measurement runs in its own fresh process (``bench/<name>.py --json``), so imports and
memory of one do not leak into another; this script collects their JSON and prints:
per-turn runtime overhead of Turnstile and LangGraph at N = 25, 100, 400, 1600 turns at three
durability settings (each system's default, both ``synchronous=NORMAL``, both ``FULL``), the
SQLite floor, database bytes per turn, loading the latest state in a fresh process, resume
latency and checkpoint bytes per step, 1,000 concurrent runs, ``engine --help`` start-up, and
the permission layer on the independent shell corpus (``bench/permissions.py``: pass rate per
category on its dev and held-back parts, over-blocking, unsafe allows, decision latency),
the sandbox's overhead per shell call (bubblewrap vs unconfined, and bwrap's start-up), and
the same loop through the CLI beside LangGraph and Burr (``bench/cli.py``: ms per turn,
growth, bytes per turn, peak RSS, at N = 25, 100, 400, 1600).
``--quick`` measures N = 25 and 100 only, fewer repeats, 200 concurrent runs.
``--with NAME`` also runs other benchmarks in ``bench/`` (tools, streaming, trace, and faults:
issue 14's fault table re-run through the CLI) and appends their output; ``--with temporal``
runs ``bench/temporal.py`` (``--quick`` with ``--quick``: needs the temporal extra and the
PostgreSQL server binaries) and puts its rows and its target (a 200-turn run under 2 MB of
Temporal history) in the tables.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    PYTHON,
    ROOT,
    fmt_ratio,
    fmt_stat,
    machine_info,
    machine_line,
    ratio,
    table,
    verdict,
    write_json,
)
from bench.permissions import category_table  # noqa: E402
from bench.permissions import targets as permission_targets  # noqa: E402

BENCH = ROOT / "bench"
SETTINGS = {
    # label: (Turnstile durability, LangGraph connection setting, floor, description)
    "default": ("normal", "default", "normal",
                "each default: Turnstile WAL+NORMAL, LangGraph WAL+FULL (SQLite's default)"),
    "normal": ("normal", "normal", "normal", "both WAL + synchronous=NORMAL"),
    "full": ("full", "full", "full", "both WAL + synchronous=FULL"),
}
SPEEDUP_TARGET = 10.0
GROWTH_LIMIT = 1.2
FLOOR_LIMIT = 2.0
RSS_LIMIT = 2**30
EXTRAS = ("tools", "streaming", "trace", "faults", "temporal")
COLLECTED = {"temporal": "temporal.py"}
"""Extras whose JSON joins the tables (the others' output is appended as printed)."""
NS_FULL = (25, 100, 400, 1600)
NS_QUICK = (25, 100)
NS_TINY = (3, 5)


def plan(quick: bool, tiny: bool = False) -> dict[str, list[str]]:
    """The command line of each benchmark (without ``--json``)."""
    if tiny:  # a smoke test of the whole pipeline (tests/test_bench.py): figures mean nothing
        return {
            "turnstile": ["--n", *map(str, NS_TINY), "--repeats", "1", "--load-repeats", "1"],
            "langgraph": ["--n", *map(str, NS_TINY), "--repeats", "1", "--load-repeats", "1"],
            "floor": ["--commits", "8", "--repeats", "1"],
            "resume": ["--steps", "10", "20", "--repeats", "1"],
            "concurrent": ["--runs", "5", "--turns", "3", "--delay", "0.001"],
            "startup": ["--repeats", "1"],
            "permissions": ["--rounds", "1"],
            "sandbox": ["--calls", "3"],
            "cli": ["--n", "3", "5", "--repeats", "1", "--systems", "turnstile", "--modes",
                    "pipe"],
        }
    if quick:
        return {
            "turnstile": ["--n", *map(str, NS_QUICK), "--repeats", "3", "--load-repeats", "3"],
            "langgraph": ["--n", *map(str, NS_QUICK), "--repeats", "2", "--load-repeats", "3"],
            "floor": ["--commits", "1000", "--repeats", "3"],
            "resume": ["--steps", "10", "100", "1000", "--repeats", "3"],
            "concurrent": ["--runs", "200"],
            "startup": ["--repeats", "5"],
            "permissions": ["--rounds", "3"],
            "sandbox": ["--calls", "50"],
            "cli": ["--n", "25", "100", "400", "--repeats", "2", "2", "1"],
        }
    return {
        "turnstile": ["--n", *map(str, NS_FULL), "--repeats", "3"],
        "langgraph": ["--n", *map(str, NS_FULL), "--repeats", "3", "3", "2", "1"],
        "floor": ["--commits", "2000", "--repeats", "5"],
        "resume": ["--steps", "10", "100", "1000", "10000", "--repeats", "5"],
        "concurrent": ["--runs", "1000"],
        "startup": ["--repeats", "10"],
        "permissions": ["--rounds", "10"],
        "sandbox": ["--calls", "200"],
        "cli": ["--n", "25", "100", "400", "1600", "--repeats", "7", "5", "6", "3",
                "--turnstile-repeats", "15", "11", "11", "5",
                *(["--instructions"] if shutil.which("valgrind") else [])],
    }


SCRIPTS = {"turnstile": "turnstile_loop.py", "langgraph": "langgraph_loop.py",
           "floor": "sqlite_floor.py", "resume": "resume.py", "concurrent": "concurrent.py",
           "startup": "startup.py", "permissions": "permissions.py", "sandbox": "sandbox.py",
           "cli": "cli.py", **COLLECTED}


def run_bench(name: str, args: Sequence[str], folder: Path) -> dict[str, Any] | None:
    """Run ``bench/<script> ARGS --json FILE`` in a fresh process; its JSON, or None."""
    out = folder / f"{name}.json"
    started = time.perf_counter()
    print(f"-- {name}: {SCRIPTS[name]} {' '.join(args)}", file=sys.stderr, flush=True)
    proc = subprocess.run([PYTHON, str(BENCH / SCRIPTS[name]), *args, "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    print(f"   {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    if proc.returncode != 0:
        print(f"{name} failed:\n{proc.stderr[-4000:]}", file=sys.stderr)
        return None
    data: dict[str, Any] = json.loads(out.read_text())
    return data


# -- the tables ---------------------------------------------------------------------------


def _get(data: Mapping[str, Any] | None, key: str) -> Any:
    return (data or {}).get("results", {}).get(key)


def _med(entry: Mapping[str, Any] | None, field: str) -> float | None:
    return entry[field]["median"] if entry and entry.get(field) else None


def overhead_table(ts: Any, lg: Any, floor: Any, ns: Sequence[int]) -> str:
    rows = []
    for label, (ts_d, lg_d, fl_d, _) in SETTINGS.items():
        for n in ns:
            t, g = _get(ts, f"{ts_d}:{n}"), _get(lg, f"{lg_d}:{n}")
            f = _get(floor, fl_d)
            step = _med(t, "net_per_step_s")
            rows.append([
                label, n, fmt_stat(t and t["net_per_turn_s"]), fmt_stat(g and g["net_per_turn_s"]),
                fmt_ratio(ratio(_med(g, "net_per_turn_s"), _med(t, "net_per_turn_s"))),
                fmt_stat(t and t["tail_per_turn_s"]), fmt_stat(g and g["tail_per_turn_s"]),
                fmt_stat(t and t["cpu_per_turn_s"]), fmt_stat(g and g["cpu_per_turn_s"]),
                fmt_stat(t and t["net_per_step_s"]),
                fmt_ratio(ratio(step, _med(f, "per_commit_s")))])
    return table(["durability", "N", "Turnstile ms/turn", "LangGraph ms/turn", "LG/TS",
                  "TS ms/turn at N", "LG ms/turn at N", "TS cpu ms/turn", "LG cpu ms/turn",
                  "TS ms/step", "TS step/floor"], rows)


def storage_table(ts: Any, lg: Any, ns: Sequence[int]) -> str:
    rows = []
    for n in ns:
        t, g = _get(ts, f"normal:{n}"), _get(lg, f"default:{n}")
        rows.append([n, f"{t['bytes_per_turn']:.0f}" if t else "-",
                     f"{g['bytes_per_turn']:.0f}" if g else "-",
                     f"{t['db_bytes'] / 2**20:.2f}" if t else "-",
                     f"{g['db_bytes'] / 2**20:.2f}" if g else "-",
                     fmt_ratio(ratio(g and g["bytes_per_turn"], t and t["bytes_per_turn"])),
                     fmt_stat(t and t.get("fresh_load", {}).get("total_s")),
                     fmt_stat(g and g.get("fresh_load", {}).get("total_s"))])
    return table(["N", "TS bytes/turn", "LG bytes/turn", "TS db MB", "LG db MB", "LG/TS bytes",
                  "TS load_state ms (fresh proc)", "LG get_state ms (fresh proc)"], rows)


def floor_table(floor: Any) -> str:
    return table(["SQLite floor (1.5 KB row per transaction)", "ms per commit"],
                 [[e["setting"], fmt_stat(e["per_commit_s"])]
                  for e in (floor or {}).get("results", {}).values()])


def resume_table(resume: Any) -> str:
    rows = [[e["steps"], fmt_stat(e["total_s"]), fmt_stat(e["load_s"]), fmt_stat(e["build_s"]),
             fmt_stat(e["import_s"], digits=0), f"{e['checkpoint_bytes_per_step']:.0f}",
             f"{e['all_bytes_per_step']:.0f}"]
            for e in (resume or {}).get("results", {}).values()]
    return table(["resume: steps", "open+load+build ms", "load_state ms", "build runner ms",
                  "imports ms", "checkpoint B/step", "all B/step"], rows)


def sandbox_rows(box: Any) -> list[list[str]]:
    """Rows for ``other_table``: run_shell sandboxed vs unconfined, and bwrap's start-up."""
    if not box:
        return []
    if not box.get("available"):
        return [["sandbox (bubblewrap)", f"not measured: {box.get('reason')}"]]
    st = box["stats"]
    return [[f"run_shell x {box['calls']}: sandboxed vs unconfined (median)",
             f"{st['sandboxed']['median'] * 1000:.2f} vs {st['unconfined']['median'] * 1000:.2f}"
             f" ms: +{box['overhead_s'] * 1000:.2f} ms per call"],
            [f"run_shell x {box['calls']} in a git repository (vcs: write), median",
             f"+{box['overhead_repository_s'] * 1000:.2f} ms per call"],
            ["bwrap start-up (bwrap true - true, median)",
             f"{box['bwrap_startup_s'] * 1000:.2f} ms ({box['bwrap']} {box['version']})"]]


def other_table(conc: Any, start: Any, box: Any = None) -> str:
    rows = []
    if conc:
        rows.append([f"{conc['runs']} concurrent runs x {conc['turns']} turns "
                     f"({conc['delay_s'] * 1000:.0f} ms model latency, {conc['store']} store)",
                     f"wall {conc['wall_s']:.1f} s, {conc['steps_per_s']:.0f} steps/s, peak RSS "
                     f"{conc['peak_rss_bytes'] / 2**20:.0f} MB, errors {conc['errors']}, runs with "
                     f"lost/duplicated rows {conc['runs_with_lost_or_duplicated_rows']}"])
    if start:
        rows.append(["python -m engine --help",
                     f"{fmt_stat(start['help_s'], digits=1)} ms (bare python "
                     f"{fmt_stat(start['python_bare_s'], digits=1)} ms)"])
    rows.extend(sandbox_rows(box))
    return table(["measurement", "result"], rows)


def temporal_table(tp: Mapping[str, Any]) -> str:
    """``bench/temporal.py``: ms per turn by backend and store, history bytes per turn."""
    rows = [["local, SQLite", f"{tp['local']['per_turn_ms']:.1f}", "-"]]
    for key, label in (("temporal", "Temporal (poll cap lifted), SQLite"),
                       ("temporal_poll_capped", "Temporal (dev server default), SQLite")):
        rows.append([label, f"{tp[key]['per_turn_ms']:.1f}",
                     f"{tp[key]['history_bytes_per_turn']:.0f}"])
    if tp.get("postgres"):
        rows += [["local, Postgres", f"{tp['postgres']['local']['per_turn_ms']:.1f}", "-"],
                 ["Temporal (poll cap lifted), Postgres",
                  f"{tp['postgres']['temporal']['per_turn_ms']:.1f}", "-"]]
    cmp = tp.get("naive")
    if cmp:
        naive, limit = cmp["naive"], cmp["naive"]["limit_turn"]
        rows += [[f"Temporal, Turnstile, {cmp['turns']} turns of {cmp['note_bytes']} B reads",
                  f"{cmp['turnstile']['per_turn_ms']:.1f}",
                  f"{cmp['turnstile']['history_bytes_per_turn']:.0f}"],
                 [f"Temporal, naive loop, same turns (50 MiB at turn {limit or '-'})",
                  f"{naive['per_turn_ms']:.1f}", f"{naive['history_bytes_per_turn']:.0f}"]]
    return table([f"agent turns on Temporal ({tp['turns']} turns unless said)", "ms/turn",
                  "history B/turn"], rows)


def cli_table(cli: Mapping[str, Any]) -> str:
    """Through the CLI (``bench/cli.py``): marginal ms per turn, growth, bytes, RSS."""
    ns = cli["ns"]
    rows = []
    for name, e in cli["summary"].items():
        top = cli["results"][name].get(str(e["max_n"]), {})
        rows.append([name, "-" if e["ms_per_turn"] is None else f"{e['ms_per_turn']:.2f}",
                     fmt_ratio(e["growth"]),
                     "-" if e.get("cpu_ms_per_turn") is None else f"{e['cpu_ms_per_turn']:.2f}",
                     fmt_ratio(e.get("cpu_growth")), f"{top.get('bytes_per_turn', 0):.0f}",
                     f"{top.get('peak_rss_bytes', 0) / 2**20:.0f}",
                     f"{top.get('load', -1):.1f}"])
    ref = 400 if 400 in ns else max(ns)
    return table([f"through the CLI (N={min(ns)}..{max(ns)})", f"ms/turn {min(ns)}->{ref}",
                  "growth 100->400 vs 25->100", "cpu ms/turn", "cpu growth",
                  "bytes/turn at largest N",
                  "peak RSS MB", "load avg"], rows)


# -- targets ------------------------------------------------------------------------------


def targets(r: Mapping[str, Any], ns: Sequence[int]) -> list[list[str]]:
    """One row per target: what, measured, limit, PASS/FAIL (``-`` when not measured)."""
    ts, lg, floor = r.get("turnstile"), r.get("langgraph"), r.get("floor")
    at = 400 if 400 in ns else max(ns)
    lo, hi = min(ns), max(ns)
    rows: list[list[str]] = []
    for label, (ts_d, lg_d, _, _) in SETTINGS.items():
        speed = ratio(_med(_get(lg, f"{lg_d}:{at}"), "net_per_turn_s"),
                      _med(_get(ts, f"{ts_d}:{at}"), "net_per_turn_s"))
        rows.append([f"Turnstile >= 10x faster than LangGraph per turn at N={at} ({label})",
                     fmt_ratio(speed), ">= 10x",
                     verdict(None if speed is None else speed >= SPEEDUP_TARGET)])
    for d in ("normal", "full"):
        growth = ratio(_med(_get(ts, f"{d}:{hi}"), "tail_per_turn_s"),
                       _med(_get(ts, f"{d}:{lo}"), "tail_per_turn_s"))
        rows.append([f"Turnstile ms/turn at N={hi} vs N={lo} ({d})", fmt_ratio(growth),
                     "<= 1.2x", verdict(None if growth is None else growth <= GROWTH_LIMIT)])
    t_hi, t_lo = _get(ts, f"normal:{hi}"), _get(ts, f"normal:{lo}")
    b_growth = ratio(t_hi and t_hi["bytes_per_turn"], t_lo and t_lo["bytes_per_turn"])
    rows.append([f"Turnstile bytes/turn at N={hi} vs N={lo}", fmt_ratio(b_growth), "<= 1.2x",
                 verdict(None if b_growth is None else b_growth <= GROWTH_LIMIT)])
    for d in ("normal", "full"):
        vs = ratio(_med(_get(ts, f"{d}:{at}"), "net_per_step_s"),
                   _med(_get(floor, d), "per_commit_s"))
        rows.append([f"Turnstile ms/step vs SQLite floor at N={at} (synchronous={d.upper()})",
                     fmt_ratio(vs), "<= 2x", verdict(None if vs is None else vs <= FLOOR_LIMIT)])
    rows.extend(_resume_targets(r.get("resume")))
    rows.extend(_other_targets(r.get("concurrent"), r.get("startup")))
    if r.get("permissions"):
        rows.extend(permission_targets(r["permissions"]))
    box = r.get("sandbox")
    if box and box.get("available"):
        rows.append(["sandboxed run_shell overhead per call (median)",
                     f"{box['overhead_s'] * 1000:.1f} ms (repository "
                     f"{box['overhead_repository_s'] * 1000:.1f} ms)", "< 15 ms",
                     verdict(box["pass"])])
    if r.get("cli"):
        rows.extend(r["cli"]["targets"])
    if r.get("temporal"):
        rows.extend(r["temporal"]["targets"])
    return rows


def _resume_targets(resume: Any) -> list[list[str]]:
    if not resume:
        return []
    e = resume["results"].get("1000")
    return [
        ["resume of a 1,000-step run (fresh process, imports apart)",
         f"{e['total_s']['median'] * 1000:.1f} ms" if e else "-", "< 50 ms",
         verdict(resume["resume_1000_pass"])],
        ["checkpoint bytes/step, largest vs smallest run", fmt_ratio(resume["checkpoint_growth"]),
         "<= 1.2x (flat)", verdict(resume["checkpoint_growth_pass"])]]


def _other_targets(conc: Any, start: Any) -> list[list[str]]:
    rows = []
    if conc:
        ok = (conc["errors"] == 0 and conc["runs_with_lost_or_duplicated_rows"] == 0
              and conc["peak_rss_bytes"] < RSS_LIMIT)
        rows.append([f"{conc['runs']} concurrent runs: errors, lost/dup, peak RSS",
                     f"{conc['errors']}, {conc['runs_with_lost_or_duplicated_rows']}, "
                     f"{conc['peak_rss_bytes'] / 2**20:.0f} MB", "0, 0, < 1024 MB", verdict(ok)])
    if start:
        rows.append(["python -m engine --help", f"{start['help_s']['median'] * 1000:.0f} ms",
                     "< 300 ms", verdict(start["pass"])])
    return rows


def render(results: Mapping[str, Any], ns: Sequence[int], info: Mapping[str, Any]) -> str:
    ts, lg, floor = results.get("turnstile"), results.get("langgraph"), results.get("floor")
    notes = [
        machine_line(info),
        f"load average at start: {info.get('loadavg', '?')}",
        "Per turn = one model call + one tool call (Turnstile: 5 persisted steps; LangGraph: 2 "
        "checkpoints). Time inside the scripted model and the tool is subtracted. "
        "'ms/turn at N' = the last turns of the run (the cost of a turn at turn N); "
        "figures are median [min-max] over repeats.",
        "Durability: " + "; ".join(f"{k} = {v[3]}" for k, v in SETTINGS.items())
        + ". LangGraph always runs with durability='sync'.",
    ]
    if lg is None:
        notes.append("LangGraph not measured (pip install -e '.[bench]').")
    parts = ["\n".join(notes), overhead_table(ts, lg, floor, ns), floor_table(floor),
             storage_table(ts, lg, ns), resume_table(results.get("resume")),
             other_table(results.get("concurrent"), results.get("startup"),
                         results.get("sandbox")),
             *([category_table(results["permissions"])] if results.get("permissions") else []),
             *([cli_table(results["cli"])] if results.get("cli") else []),
             *([temporal_table(results["temporal"])] if results.get("temporal") else []),
             table(["target", "measured", "limit", "result"], targets(results, ns))]
    return "\n\n".join(parts)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_extras(names: Sequence[str]) -> str:
    out = []
    for name in names:
        script = BENCH / f"{name}.py"
        if not script.exists():
            out.append(f"== {name}: bench/{name}.py not found")
            continue
        proc = subprocess.run([PYTHON, str(script)], cwd=ROOT, capture_output=True, text=True)
        out.append(f"== bench/{name}.py (exit {proc.returncode})\n{proc.stdout}"
                   + (proc.stderr[-2000:] if proc.returncode else ""))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 25, 100; fewer repeats")
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--only", nargs="+", choices=sorted(SCRIPTS), help="run only these")
    parser.add_argument("--with", dest="extras", nargs="+", default=[], choices=EXTRAS)
    args = parser.parse_args(argv)
    info = {**machine_info(), "loadavg": _loadavg()}
    commands = plan(args.quick, args.tiny)
    for name in COLLECTED:
        if name in args.extras:
            commands[name] = ["--quick"] if args.quick or args.tiny else []
    args.extras = [e for e in args.extras if e not in COLLECTED]
    if importlib.util.find_spec("langgraph") is None:
        commands.pop("langgraph")
    if args.only:
        commands = {k: v for k, v in commands.items() if k in args.only}
    ns = list(NS_TINY if args.tiny else NS_QUICK if args.quick else NS_FULL)
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        results = {name: run_bench(name, cmd, Path(tmp)) for name, cmd in commands.items()}
    print(render(results, ns, info))
    if args.extras:
        print()
        print(run_extras(args.extras))
    write_json(args.json, {"machine": info, "quick": args.quick, "ns": ns,
                           "targets": targets(results, ns), **results})
    return 0 if all(r is not None for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
