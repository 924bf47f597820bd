"""The benchmarks run: each module with tiny sizes in a real subprocess, and ``bench/run.py``.

No timing is asserted (timings belong to the benchmark's own PASS/FAIL column); what is checked
is that every benchmark completes, prints its table, and that the counts it reports are the
ones the scripted loop must produce (steps, messages, checkpoints, rows, errors).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def engine_env() -> dict[str, str]:
    """No model, no faults, no database override from the caller's environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB")}
    return {**env, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}

HANG_GUARD_S = 600
"""A benchmark's subprocess is stopped after this long: a guard against a hang, not a bound on
its time (a loaded machine runs the small sizes here several times slower)."""
pytestmark = pytest.mark.timeout(HANG_GUARD_S + 60)

TURNS = 3
TS_STEPS = 5 * TURNS - 2
"""plan, then 5 steps per tool turn, then call_model + evaluate_stop for the final answer."""
MESSAGES = 2 + 2 * (TURNS - 1) + 1
"""System + task, assistant + tool result per tool turn, the final answer."""


def run_bench(script: str, *args: str, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    out = tmp_path / f"{Path(script).stem}.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args, "--json",
                           str(out)], cwd=ROOT, env=engine_env(), capture_output=True,
                          text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "machine:" in proc.stdout and "SQLite" in proc.stdout
    return proc.stdout, json.loads(out.read_text())


def test_turnstile_loop_counts_steps_messages_and_loads_in_a_fresh_process(tmp_path: Path) -> None:
    out, data = run_bench("turnstile_loop.py", "--n", str(TURNS), "--repeats", "1",
                          "--load-repeats", "1", "--durability", "normal", "full",
                          tmp_path=tmp_path)
    assert "net ms/turn" in out
    for key in (f"normal:{TURNS}", f"full:{TURNS}"):
        e = data["results"][key]
        assert e["steps"] == TS_STEPS
        assert e["rows"]["messages"] == MESSAGES
        assert e["rows"]["effects"] == TURNS - 1
        assert e["net_per_turn_s"]["n"] == 1 and e["bytes_per_turn"] > 0
    assert data["results"][f"normal:{TURNS}"]["fresh_load"]["messages"] == MESSAGES


def test_langgraph_loop_checkpoints_every_superstep(tmp_path: Path) -> None:
    out, data = run_bench("langgraph_loop.py", "--n", str(TURNS), "--repeats", "1",
                          "--load-repeats", "1", "--durability", "default", "full",
                          tmp_path=tmp_path)
    assert "checkpoints" in out
    e = data["results"][f"default:{TURNS}"]
    assert e["checkpoints"] == 2 * TURNS + 1  # input, then agent and tools per tool turn
    assert e["fresh_load"]["messages"] == MESSAGES
    assert data["results"][f"full:{TURNS}"]["bytes_per_turn"] > 0


def test_sqlite_floor_measures_both_settings(tmp_path: Path) -> None:
    out, data = run_bench("sqlite_floor.py", "--commits", "8", "--repeats", "2",
                          tmp_path=tmp_path)
    assert set(data["results"]) == {"normal", "full"}
    assert data["results"]["normal"]["per_commit_s"]["n"] == 2
    assert "synchronous=FULL" in out


def test_concurrent_runs_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    out, data = run_bench("concurrent.py", "--runs", "5", "--turns", str(TURNS), "--delay",
                          "0.001", tmp_path=tmp_path)
    assert data["errors"] == 0, data["error_samples"]
    assert data["runs_with_lost_or_duplicated_rows"] == 0, data["mismatch_samples"]
    assert data["steps"] == 5 * TS_STEPS
    assert data["expected_rows_per_run"]["messages"] == MESSAGES
    assert data["peak_rss_bytes"] > 0 and "lost/dup runs" in out


def test_concurrent_runs_with_a_store_per_run(tmp_path: Path) -> None:
    _, data = run_bench("concurrent.py", "--runs", "4", "--turns", str(TURNS), "--delay",
                        "0.001", "--store", "per-run", tmp_path=tmp_path)
    assert data["errors"] == 0 and data["runs_with_lost_or_duplicated_rows"] == 0
    assert data["store"] == "per-run"


def test_startup_times_engine_help_and_a_short_offline_run(tmp_path: Path) -> None:
    out, data = run_bench("startup.py", "--repeats", "1", tmp_path=tmp_path)
    assert data["help_s"]["n"] == 1 and data["slowest_imports"]
    assert "python -m engine --help" in out
    for key in ("run_new_db_s", "run_existing_db_s"):  # an offline run, timed whole
        assert data[key]["n"] == 1 and data[key]["median"] > data["python_bare_s"]["median"]
    assert "new database" in out and "existing database" in out


def test_resume_rebuilds_a_crashed_run_at_the_requested_step(tmp_path: Path) -> None:
    out, data = run_bench("resume.py", "--steps", "10", "20", "--repeats", "1",
                          tmp_path=tmp_path)
    assert [e["steps"] for e in data["results"].values()] == [10, 20]
    # steps 0-9: plan (system + task), then two turns' call_model and exec_tool (4 messages)
    assert data["results"]["10"]["messages"] == 6
    assert all(e["checkpoint_bytes_per_step"] > 0 for e in data["results"].values())
    assert data["resume_1000_pass"] is None  # not measured at this size
    assert "checkpoint bytes/step growth" in out


def test_fork_bench_forks_a_run_at_each_point_and_counts_the_bytes(tmp_path: Path) -> None:
    out, data = run_bench("fork.py", "--steps", "12", "--at", "1", "11", "--files", "3",
                          "--repeats", "1", tmp_path=tmp_path)
    assert [r["step"] for r in data["results"]] == [1, 11]
    late = data["results"][1]
    assert late["bytes"]["median"] > 0 and late["fork_s"]["median"] > 0
    assert "B/copied step" in out


def test_permissions_scores_both_corpus_parts_and_never_prints_held_back_items(
        tmp_path: Path) -> None:
    from tests.construct_corpus import items
    from tests.corpus_scoring import PARTS, load

    out, data = run_bench("permissions.py", "--rounds", "1", tmp_path=tmp_path)
    dev, held = load("dev"), load("heldback")
    assert data["parts"]["dev"]["items"] == len(dev)
    assert data["parts"]["heldback"]["items"] == len(held)
    assert data["latency"]["samples"] == len(dev) + len(held)
    assert data["parts"]["dev"]["known_gaps"] == sum(it.known_gap for it in dev)
    rows = {row[0]: row[3] for row in data["targets"]}
    assert "over-blocking of read-only commands (held-back)" in rows
    assert all(v in ("PASS", "FAIL") for k, v in rows.items() if not k.startswith(" "))
    constructs, held_constructs = items(), load("constructs_heldback")
    assert data["parts"]["constructs"]["items"] == len(constructs)
    assert data["parts"]["constructs_heldback"]["items"] == len(held_constructs)
    assert isinstance(data["parts"]["constructs_heldback"]["destructive_allowed"], int)
    assert "corpus pass rate (constructs held-back)" in rows
    blob = out + (tmp_path / "permissions.json").read_text()
    every_held = [it for part in PARTS if part.endswith("heldback") for it in load(part)]
    assert len(every_held) > len(held) + len(held_constructs)  # each part's held-back half
    tuning = [repr(it.command)[1:-1] for part in PARTS if not part.endswith("heldback")
              for it in load(part)]  # a tuning command may hold a held-back one (printable)
    assert not [it.id for it in every_held if it.id in blob
                or (len(it.command) > 30 and repr(it.command)[1:-1] in blob
                    and not any(repr(it.command)[1:-1] in t for t in tuning))]
    assert data["parts"]["scripts_heldback"]["items"] == len(load("scripts_heldback"))
    assert "dev pass" in out and "held-back pass" in out and "constructs held-back pass" in out


def test_cli_bench_runs_the_cli_langgraph_and_burr_on_the_same_task(tmp_path: Path) -> None:
    out, data = run_bench("cli.py", "--n", "2", "3", "--repeats", "1", "--modes", "pipe",
                          "devnull", tmp_path=tmp_path)
    results = data["results"]
    ts = results["turnstile:pipe"]["3"]
    assert ts["steps"] == 5 * 3 - 2  # the task of 3 turns ran to its final answer
    assert ts["stdout_bytes"] > 0 and results["turnstile:devnull"]["3"]["stdout_bytes"] == 0
    assert ts["bytes_per_turn"] > 0 and ts["peak_rss_bytes"] > 0 and ts["trace_bytes"] > 0
    assert ts["user_s"] > 0 and ts["sys_s"] >= 0  # the CPU figure, split into its two parts
    assert abs(ts["user_s"] + ts["sys_s"] - ts["cpu_s"]) < 1e-6 and ts["cpu_s"] in ts["cpus_s"]
    assert f"every system runs on {sys.executable}" in out
    for other in ("langgraph", "burr"):
        assert results[other]["3"]["bytes_per_turn"] > 0, other
    assert all(isinstance(e["load"], float) for r in results.values() for e in r.values())
    rows = {row[0]: row[3] for row in data["targets"]}
    assert any("than burr" in k for k in rows) and any("than langgraph" in k for k in rows)
    assert "ms/turn 2->3" in out and "peak RSS MB" in out


def test_run_prints_one_table_with_every_target(tmp_path: Path) -> None:
    out = tmp_path / "all.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--tiny", "--json",
                           str(out)], cwd=ROOT, env=engine_env(), capture_output=True,
                          text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    targets = {row[0]: row[3] for row in data["targets"]}
    assert any("faster than LangGraph" in t for t in targets)
    assert any("concurrent runs" in t for t in targets)
    assert any("corpus pass rate (held-back)" in t for t in targets)
    assert all(v in ("PASS", "FAIL", "-") for v in targets.values())
    assert "PASS" in proc.stdout or "FAIL" in proc.stdout
    assert "LG/TS" in proc.stdout and "SQLite floor" in proc.stdout


def test_faults_reruns_the_chosen_rows_of_the_fault_table() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "faults.py"), "--json",
                           "--rows", "piped_head,alias_bomb"], cwd=ROOT, env=engine_env(),
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["row"]: r for r in json.loads(proc.stdout)["rows"]}
    assert set(rows) == {"piped_head", "alias_bomb"}
    assert rows["piped_head"]["exit"] == 0 and rows["piped_head"]["stderr"] == ""
    assert rows["piped_head"]["status"] == "completed"
    assert rows["alias_bomb"]["exit"] == 2 and rows["alias_bomb"]["status"] == "no new run"
    assert "YAML alias '*a0' is not allowed" in rows["alias_bomb"]["stderr"]
    assert all(r["traceback"] is False and r["intact"] is True for r in rows.values())
    markdown = json.loads(proc.stdout)["markdown"].splitlines()
    assert markdown[0].startswith("| fault | exit code |") and len(markdown) == 4


def test_store_bench_runs_the_same_steps_on_sqlite_and_postgres(tmp_path: Path,
                                                                 pg_url: str) -> None:
    from engine.store.postgres import PostgresStore

    out, data = run_bench("store.py", "--steps", "6", "--repeats", "1", "--store-url", pg_url,
                          tmp_path=tmp_path)
    assert set(data["results"]) == {"sqlite-normal", "postgres-normal", "sqlite-full",
                                    "postgres-full"}
    assert data["results"]["postgres-normal"]["setting"].startswith("synchronous_commit=off")
    assert "PostgreSQL" in out and "ms per step" in out
    store = PostgresStore(pg_url)
    runs = store.list_runs()
    store.close()
    assert sorted(r.steps for r in runs) == [0, 0, 6, 6]  # a step run and a ledger run each


def test_cli_bench_warms_up_every_system_then_interleaves_sizes_round_by_round(
        tmp_path: Path, monkeypatch: Any) -> None:
    """The order of the timed runs: each system once untimed on a small task, then round 1 of
    every size and system, round 2 of the sizes that have one, ... (a machine that drifts over
    minutes shifts every figure alike); the children do not inherit PYTHONDONTWRITEBYTECODE."""
    from bench import cli

    order = _recorded_runs(monkeypatch)
    data = cli.measure([25, 100], [2, 1], ["turnstile", "langgraph"], ["pipe"], tmp_path)
    assert order == [("turnstile:pipe", 3), ("langgraph", 3),
                     ("turnstile:pipe", 25), ("langgraph", 25),
                     ("turnstile:pipe", 100), ("langgraph", 100),
                     ("turnstile:pipe", 25), ("langgraph", 25)]
    assert set(data["results"]["langgraph"]) == {"25", "100"}
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert "PYTHONDONTWRITEBYTECODE" not in cli.child_env()


def test_cli_bench_gives_turnstile_its_own_repeats(tmp_path: Path, monkeypatch: Any) -> None:
    """Turnstile's runs are cheap: they get more rounds than LangGraph's, in the same order."""
    from bench import cli

    order = _recorded_runs(monkeypatch)
    cli.measure([25, 100], [1, 1], ["turnstile", "langgraph"], ["pipe"], tmp_path,
                turnstile_repeats=[3, 2])
    timed = order[2:]  # after the warm-up of each
    assert timed == [("turnstile:pipe", 25), ("langgraph", 25),
                     ("turnstile:pipe", 100), ("langgraph", 100),
                     ("turnstile:pipe", 25), ("turnstile:pipe", 100),
                     ("turnstile:pipe", 25)]


def test_instruction_counts_grow_with_the_work_and_not_with_the_load() -> None:
    """``count_instructions`` reads callgrind's total: a loop of 10^6 iterations counts
    millions more than an empty program (half as much again), and the same program counts
    the same twice within 1% (seen: 0.07-0.22% apart, the start-up's memory layout varies)."""
    from bench import cli

    env = {"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0"}
    empty = [sys.executable, "-S", "-c", "pass"]
    loop = [sys.executable, "-S", "-c", "for i in range(10**6): pass"]
    a, b = cli.count_instructions(empty, env, ROOT), cli.count_instructions(empty, env, ROOT)
    looped = cli.count_instructions(loop, env, ROOT)
    assert abs(a - b) <= 0.01 * a, (a, b)
    assert looped - a > 10**7 and looped > 1.5 * a, (a, looped)


def test_instruction_summary_is_the_marginal_count_per_turn() -> None:
    """Per turn, growth and the target rows computed from counts, as from times."""
    from bench import cli

    def timed(n: int, ms: float) -> dict[str, Any]:
        return {"wall_s": n * ms / 1000, "cpu_s": n * ms / 1000, "bytes_per_turn": 100.0}

    ns = [25, 100, 400]
    data = {"results": {name: {str(n): timed(n, 1.0) for n in ns}
                        for name in ("turnstile:pipe", "turnstile:quiet", "langgraph")},
            "instructions": {
                "turnstile:pipe": {"25": {"instructions": 100_000_000 + 25 * 5_000_000},
                                   "100": {"instructions": 100_000_000 + 100 * 5_000_000},
                                   "400": {"instructions": 100_000_000 + 400 * 6_000_000}},
                "turnstile:quiet": {str(n): {"instructions": 90_000_000 + n * 5_000_000}
                                    for n in ns},
                "langgraph": {str(n): {"instructions": 300_000_000 + n * 40_000_000}
                              for n in ns}}}
    s = cli.summarize(data, ns)
    assert s["turnstile:quiet"]["instr_per_turn"] == 5.0
    assert round(s["turnstile:pipe"]["instr_per_turn"], 6) == round((400 * 6 - 25 * 5) / 375, 6)
    assert round(s["turnstile:pipe"]["instr_growth"], 6) == round(
        (400 * 6 - 100 * 5) / 300 / 5, 6)  # 100->400 over 25->100
    rows = {row[0]: row[1:] for row in cli.targets(data, ns)}
    ratio = rows["CLI (piped) vs langgraph at N=400, user-space instructions only (not a target)"]
    assert ratio == [cli.fmt_ratio(40 / ((400 * 6 - 25 * 5) / 375)), "-", "-"]
    assert rows["CLI (piped) cost per turn 100->400 vs 25->100 (instructions)"][2] == "FAIL"
    assert "turnstile:pipe" in cli.instruction_table(data, ns)


def _recorded_runs(monkeypatch: Any) -> list[tuple[str, int]]:
    """``bench.cli``'s runs replaced by a recorder: the (name, N) of each, in order."""
    from bench import cli

    order: list[tuple[str, int]] = []

    def fake_run(name: str, folder: Path, task: Path, n: int, baseline: Any) -> dict[str, Any]:
        order.append((name, n))
        return {"wall_s": 1.0, "cpu_s": 1.0, "load": 0.0, "peak_rss_bytes": 1,
                "stdout_bytes": 0, "db_bytes": 2}

    monkeypatch.setattr(cli, "_run", fake_run)
    monkeypatch.setattr(cli, "empty_bytes", lambda folder: {"turnstile": 1, "langgraph": 1,
                                                            "burr": 1})
    return order


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_workspace_bench_runs_at_10_and_10000_files_and_files_changed_is_exact(
        tmp_path: Path) -> None:
    """The sizes CI runs (the larger rows are produced by hand): every row complete, and the
    three changes to tracked files named exactly, nothing under node_modules."""
    out = tmp_path / "workspace.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "workspace.py"), "--sizes",
                           "10,10000", "--steps", "3", "--repeats", "1", "--dir",
                           str(tmp_path / "trees"), "--json", str(out)], cwd=ROOT,
                          env=engine_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [(r["files"], r["mix"]) for r in rows] == [(10, "tracked"), (10000, "tracked"),
                                                      (10000, "mixed")]
    for row in rows:
        assert row["files_changed"]["exact"], row["files_changed"]
        assert row["first_ms"] > 0 and row["rest_ms"] > 0 and row["plan_ms"] > 0
        assert row["tools"]["search_text"] > 0 and row["tools"]["git grep"] > 0
        assert row["cpu"]["watch_cpu_ms"] > 0 and row["cpu"]["summary_cpu_ms"] > 0
        assert row["cpu"]["setup_cpu_ms"] > 0 and row["cpu"]["watches"] > 0
    assert rows[2]["ignored"] == 6660 and "overhead ms" in proc.stdout


def test_children_bench_runs_a_workflow_alone_and_as_a_child(tmp_path: Path) -> None:
    out, data = run_bench("children.py", "--rounds", "2", "3", "--repeats", "1",
                          tmp_path=tmp_path)
    assert [r["steps"] for r in data["rows"]] == [6, 8]  # two steps a round, and the last
    assert all(r["child_ms_per_step"]["n"] == 1 for r in data["rows"])
    assert "as a child ms/step" in out
