"""The eval harness: runs golden tasks, each in a fresh workspace and database, and scores them.

``python -m engine eval [DIR]`` finds every folder with a ``task.yaml`` under ``DIR``, runs each
task (its fixture copied, its setup run, its script or ``--model``), applies its checks and prints
one table row per task: category, pass/fail, the first failed check, steps, tokens, cost and
duration. A task with ``faults`` runs its first attempt in a subprocess with ``ENGINE_FAULTS``
set (the fault kills that process) and is then resumed here. A broken task, a diverging script
or an internal error fails that task only. Failed tasks keep their database, workspace, trace
and audit log; passed ones are deleted (unless ``--db`` collects every run in one database).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from engine.store.base import Store
from engine.store.url import StoreTarget, as_target, parse_store_url
from engine.tasks.checks import Attempt, CheckContext, CheckResult, run_checks, validate_checks
from engine.tasks.golden import TASK_FILE, GoldenTask, load_task
from engine.vocabulary.errors import TurnstileError, UsageError
from engine.vocabulary.hints import command

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""Where ``python -m engine`` works for the first attempt of a task with faults."""
FIRST_ATTEMPT_TIMEOUT_S = 300.0
DB_NAME = "engine.db"

Progress = Callable[[str], None]


@dataclass
class TaskResult:
    """One attempt at one task: verdict, first failure, and what the run spent."""

    task: str
    category: str
    folder: str
    passed: bool = False
    failed_check: str | None = None
    reason: str | None = None
    """Why the task failed: the run's error (e.g. ``script diverged ...``) or the first failed
    check's expected-vs-found message."""
    checks: list[CheckResult] = field(default_factory=list)
    run_id: str | None = None
    status: str | None = None
    steps: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0
    duration_s: float = 0.0
    kept: str | None = None
    """Folder holding the failed run's database, workspace, trace and audit log."""
    db: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task, "category": self.category, "folder": self.folder,
            "passed": self.passed, "failed_check": self.failed_check, "reason": self.reason,
            "run_id": self.run_id, "status": self.status, "steps": self.steps,
            "tokens": self.tokens, "cost_usd": self.cost_usd,
            "duration_s": round(self.duration_s, 3), "kept": self.kept, "db": self.db,
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass
class TaskSummary:
    """Every attempt at one task (``--repeat``), with the pass rate."""

    task: str
    category: str
    results: list[TaskResult]

    @property
    def passes(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def passed(self) -> bool:
        return self.passes == len(self.results)

    @property
    def first_failure(self) -> TaskResult | None:
        return next((r for r in self.results if not r.passed), None)

    def mean(self, attr: str) -> float | None:
        values: list[float | None] = [getattr(r, attr) for r in self.results]
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if len(known) == len(values) else None

    def to_json(self) -> dict[str, Any]:
        failure = self.first_failure
        return {
            "task": self.task, "category": self.category, "passed": self.passed,
            "pass_rate": self.passes / len(self.results), "runs": len(self.results),
            "failed_check": failure.failed_check if failure else None,
            "reason": failure.reason if failure else None,
            "steps": self.mean("steps"), "tokens": self.mean("tokens"),
            "cost_usd": self.mean("cost_usd"), "duration_s": round(self.mean("duration_s") or 0,
                                                                    3),
            "attempts": [r.to_json() for r in self.results],
        }


# -- finding tasks --------------------------------------------------------------------------


def find_tasks(root: Path, pattern: str | None = None) -> list[Path]:
    """Task folders (holding ``task.yaml``) at or under ``root``, sorted, filtered by name."""
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory of golden tasks")
    if (root / TASK_FILE).exists():
        folders = [root]
    else:
        folders = sorted(p.parent for p in root.rglob(TASK_FILE)
                         if "fixture" not in p.relative_to(root).parts)
    if pattern:
        folders = [f for f in folders if pattern.lower() in f.name.lower()]
    return folders


# -- one task -------------------------------------------------------------------------------


def run_task(folder: Path, db: Path | StoreTarget, *, model: str | None = None,
             options: Mapping[str, Any] | None = None) -> TaskResult:
    """Run one task in the store ``db`` (a SQLite path: its workspace goes beside it; or a
    target such as a Postgres database: under its ``data_dir``) and check it.

    Never raises for a problem of the task itself: a broken ``task.yaml``, a setup that fails,
    a script that diverges or a crash inside the engine come back as a failed ``TaskResult``.
    """
    started = time.monotonic()
    result = TaskResult(folder.name, "?", str(folder))
    try:
        task = load_task(folder)
        result.task, result.category = task.name, task.category
        if not task.checks:
            raise UsageError(f"{folder / TASK_FILE}: checks: a task needs at least one check")
        validate_checks(task.checks, f"{folder / TASK_FILE}: checks")
        _run_and_check(task, as_target(db), model, result, dict(options or {}))
    except TurnstileError as exc:
        result.failed_check = result.failed_check or "task"
        result.reason = str(exc)
    except Exception as exc:  # an engine bug must fail this task, not the whole suite
        logger.exception("task %s crashed the harness", folder)
        result.failed_check = "harness"
        result.reason = f"internal error: {type(exc).__name__}: {exc}"
    result.duration_s = time.monotonic() - started
    return result


def _run_and_check(task: GoldenTask, target: StoreTarget, model: str | None,
                   result: TaskResult, options: dict[str, Any]) -> None:
    spec = model or task.model or "scripted"
    attempts: list[Attempt] = []
    run_id = _first_attempt(task, target, spec, attempts, options) if task.faults else None
    if target.path is not None:
        target.path.parent.mkdir(parents=True, exist_ok=True)
    store = target.open()
    try:
        run_id, error = _drive(task, store, target, spec, run_id, attempts, options)
        result.run_id = run_id
        info = store.get_run(run_id)
        result.status, result.steps = info.status, info.steps
        result.tokens, result.cost_usd = info.input_tokens + info.output_tokens, info.cost_usd
        ctx = CheckContext(store, run_id, Path(info.workspace), task.folder,
                           task.folder / task.fixture, tuple(attempts))
        result.checks = run_checks(task.checks, ctx, f"{task.folder / TASK_FILE}: checks")
        failed = [c for c in result.checks if not c.ok]
        result.passed = not failed
        if failed:
            result.failed_check = failed[0].name
            result.reason = _error_reason(error) if error else failed[0].message
    finally:
        store.close()


def _error_reason(error: str) -> str:
    """The run's error as the task's failure reason; a script running out is a divergence."""
    if error.startswith("script") and not error.startswith("script diverged"):
        return f"script diverged: {error}"
    return error


def _drive(task: GoldenTask, store: Store, target: StoreTarget, spec: str, run_id: str | None,
           attempts: list[Attempt], options: dict[str, Any]) -> tuple[str, str | None]:
    """Start (or, after a first attempt, resume) the run in this process and drive it."""
    from engine.core.interrupts import drive_until_interrupted
    from engine.runs.service import Runs

    if run_id is not None and store.get_run(run_id).status in ("completed", "failed"):
        return run_id, store.get_run(run_id).error  # the fault never fired: nothing to resume
    runs = Runs(store)
    with without_faults():
        if run_id is None:
            prepared = runs.prepare(task.machine_path().resolve(), golden=task.folder.resolve(),
                                    model=spec, approval=task.approval, model_options=options)
        else:
            prepared = runs.prepare_resume(run_id)
    run = (anyio.run(_executor, prepared.session) if _executor is not None
           else anyio.run(partial(runs.drive, prepared, driver=drive_until_interrupted)))
    info = store.get_run(prepared.run_id)
    attempts.append(Attempt("in-process", info.status, info.steps))
    return info.run_id, run.error


def _first_attempt(task: GoldenTask, target: StoreTarget, spec: str,
                   attempts: list[Attempt], options: dict[str, Any]) -> str:
    """Run the task in a subprocess with ``ENGINE_FAULTS`` armed; return its run id."""
    faults = ",".join(task.faults)
    cmd = [sys.executable, "-m", "engine", "run", str(task.machine_path().resolve()),
           "--golden", str(task.folder.resolve()), "--store", _url(target), "--json",
           "--approval", task.approval, "--model", spec, *_option_flags(options)]
    env = {k: v for k, v in os.environ.items()
           if k not in ("ENGINE_DB", "ENGINE_STORE_URL", "ENGINE_MODEL")}
    env["ENGINE_FAULTS"] = faults
    if target.path is not None:
        target.path.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                              timeout=FIRST_ATTEMPT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"the first attempt (ENGINE_FAULTS={faults}) did not end within "
                         f"{FIRST_ATTEMPT_TIMEOUT_S:g} s") from exc
    runs = []
    if target.exists():
        store = target.open(reading=True)
        runs = store.list_runs()
        store.close()
    if not runs:
        tail = (proc.stderr or proc.stdout).strip()[-400:] or "no output"
        raise UsageError(f"the first attempt (ENGINE_FAULTS={faults}) started no run: exit "
                         f"code {proc.returncode}: {tail}")
    info = runs[-1]
    attempts.append(Attempt("subprocess", info.status, info.steps, proc.returncode))
    return info.run_id


def _option_flags(options: Mapping[str, Any]) -> list[str]:
    """``--model-option`` flags that give a subprocess the same settings."""
    flags: list[str] = []
    for key, value in options.items():
        for item in value if key == "stop" else (value,):
            flags += ["--model-option", f"{key}={item}"]
    return flags


@contextmanager
def without_faults() -> Iterator[None]:
    """Faults are for the first attempt's subprocess only: never arm them in this process."""
    saved = os.environ.pop("ENGINE_FAULTS", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["ENGINE_FAULTS"] = saved


_executor: Callable[[Any], Any] | None = None
"""How runs are driven (``eval --backend temporal``); None: ``session.execute``, here."""


@contextmanager
def driven_by(executor: Callable[[Any], Any] | None) -> Iterator[None]:
    """Drive the tasks' runs with ``executor`` (an async function of a ``Prepared``)."""
    global _executor
    saved, _executor = _executor, executor
    try:
        yield
    finally:
        _executor = saved


def silent_observer(kind: str, payload: Mapping[str, Any]) -> None:
    """An ``Observer`` that shows nothing: the harness prints one line per task."""
    return None


def keep_artifacts(result: TaskResult, db: Path | StoreTarget) -> None:
    """Write the failed run's trace and audit log beside its database (a server's: under the
    store's ``data_dir``) and remember where."""
    target = as_target(db)
    if not target.exists():
        return
    result.kept, result.db = str(target.data_dir), target.display
    if result.run_id is None:
        return
    from engine.tracing.trace import write_trace_file

    store = target.open(reading=True)
    try:
        write_trace_file(store, result.run_id, target.data_dir / "traces")
        audit = [r.to_json() for r in store.audit(result.run_id)]
        target.data_dir.mkdir(parents=True, exist_ok=True)
        (target.data_dir / f"audit-{result.run_id}.json").write_text(
            json.dumps(audit, indent=1, default=str) + "\n", encoding="utf-8")
    except (OSError, TurnstileError) as exc:
        logger.warning("could not write the trace/audit of %s: %s", result.run_id, exc)
    finally:
        store.close()


# -- the suite ------------------------------------------------------------------------------


def run_suite(folders: Sequence[Path], *, model: str | None = None, repeat: int = 1,
              workdir: Path, shared_db: Path | StoreTarget | None = None,
              progress: Progress | None = None,
              options: Mapping[str, Any] | None = None) -> list[TaskSummary]:
    """Run every task ``repeat`` times; each attempt gets its own folder under ``workdir``
    (deleted when it passed) unless ``shared_db`` collects every run in one database."""
    import engine.session.compose  # noqa: F401  (imported once here, not inside the first task's time)

    summaries: list[TaskSummary] = []
    total = len(folders) * repeat
    done = 0
    for folder in folders:
        results = []
        for i in range(repeat):
            name = folder.name if repeat == 1 else f"{folder.name}-{i + 1}"
            own = workdir / name / DB_NAME
            result = run_task(folder, shared_db or own, model=model, options=options)
            if not result.passed:
                keep_artifacts(result, shared_db or own)
            elif shared_db is None:
                shutil.rmtree(own.parent, ignore_errors=True)
            results.append(result)
            done += 1
            if progress:
                verdict = "pass" if result.passed else f"FAIL ({result.failed_check})"
                progress(f"[{done}/{total}] {name}: {verdict} {result.duration_s:.2f} s")
        summaries.append(TaskSummary(results[0].task, results[0].category, results))
    return summaries


def format_table(summaries: Sequence[TaskSummary], repeat: int = 1) -> str:
    """The results table, then one block per failed task: why, and where its run was kept."""
    header = ("TASK", "CATEGORY", "RESULT", "FAILED CHECK", "STEPS", "TOKENS", "COST", "TIME")
    rows = [header] + [_row(s, repeat) for s in summaries]
    widths = [min(max(len(r[i]) for r in rows), 48) for i in range(len(header))]
    right = {4, 5, 6, 7}
    lines = ["  ".join(c[:widths[i]].rjust(widths[i]) if i in right else
                       c[:widths[i]].ljust(widths[i]) for i, c in enumerate(r)).rstrip()
             for r in rows]
    passed = sum(s.passed for s in summaries)
    lines.append(f"\n{passed}/{len(summaries)} tasks passed")
    for s in summaries:
        lines.extend(_failure_lines(s))
    return "\n".join(lines) + "\n"


def _row(s: TaskSummary, repeat: int) -> tuple[str, ...]:
    failure = s.first_failure
    verdict = "pass" if s.passed else "FAIL"
    if repeat > 1:
        verdict = f"{verdict} {s.passes}/{len(s.results)}"
    cost = s.mean("cost_usd")
    failed_check = (failure.failed_check or "") if failure else ""
    return (s.task, s.category, verdict, failed_check,
            f"{s.mean('steps') or 0:.0f}", f"{s.mean('tokens') or 0:.0f}",
            "unknown" if cost is None else f"${cost:.4f}", f"{s.mean('duration_s') or 0:.2f}s")


def _failure_lines(s: TaskSummary) -> list[str]:
    lines = []
    for r in s.results:
        if r.passed:
            continue
        lines.append(f"\nFAIL {r.task}: {r.reason}")
        lines.extend(f"  {c.name}: {c.message}".replace("\n", "\n    | ")
                     for c in r.checks if not c.ok)
        if r.kept:
            lines.append(f"  kept: {r.kept} (database, workspace, traces/, audit)")
        if r.run_id and r.db:
            lines.append(f"  inspect: {command('show', r.run_id, store=r.db)}")
    return lines


def suite_json(summaries: Sequence[TaskSummary], *, root: Path, model: str | None,
               repeat: int, duration_s: float) -> dict[str, Any]:
    return {"dir": str(root), "model": model or "scripted", "repeat": repeat,
            "passed": all(s.passed for s in summaries),
            "tasks_passed": sum(s.passed for s in summaries), "tasks": len(summaries),
            "duration_s": round(duration_s, 3), "results": [s.to_json() for s in summaries]}


def main(args: argparse.Namespace) -> int:
    """``python -m engine eval``: exit 0 when every task passed, 1 otherwise."""
    root = Path(args.dir)
    repeat = int(getattr(args, "repeat", 1) or 1)
    if repeat < 1:
        raise UsageError(f"--repeat {repeat}: give a number of runs >= 1")
    folders = find_tasks(root, args.pattern)
    if not folders:
        what = f" matching {args.pattern!r}" if args.pattern else ""
        raise UsageError(f"{root}: no golden task folders (with {TASK_FILE}){what}")
    db = (getattr(args, "store", None) or getattr(args, "db", None)
          or os.environ.get("ENGINE_STORE_URL") or os.environ.get("ENGINE_DB"))
    shared = _resolved(parse_store_url(db)) if db else None
    from engine.models.options import parse_cli_options

    options = parse_cli_options(getattr(args, "model_option", None))
    executor = None
    if getattr(args, "backend", "local") == "temporal":
        from engine.temporal.commands import executor_for

        executor = executor_for(args)
    workdir = Path(tempfile.mkdtemp(prefix="turnstile-eval-"))

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    progress(f"eval: {len(folders)} task(s) from {root}"
             f"{f' x {repeat}' if repeat > 1 else ''}, model {args.model or 'scripted'}")
    started = time.monotonic()
    with driven_by(executor):
        summaries = run_suite(folders, model=args.model, repeat=repeat, workdir=workdir,
                              shared_db=shared, progress=progress, options=options)
    duration = time.monotonic() - started
    _remove_if_empty(workdir)
    to_stdout = args.json == "-"  # `--json -`: stdout is the JSON alone, the table goes to stderr
    table = sys.stderr if to_stdout else sys.stdout
    table.write(format_table(summaries, repeat))
    print(f"total {duration:.1f} s", file=table)
    if args.json:
        text = json.dumps(suite_json(summaries, root=root, model=args.model, repeat=repeat,
                                     duration_s=duration), indent=2, default=str) + "\n"
        if to_stdout:
            sys.stdout.write(text)
        else:
            Path(args.json).write_text(text, encoding="utf-8")
    return 0 if all(s.passed for s in summaries) else 1


def _remove_if_empty(path: Path) -> None:
    with suppress(OSError):
        path.rmdir()


__all__ = ["TaskResult", "TaskSummary", "find_tasks", "format_table", "keep_artifacts",
           "main", "run_suite", "run_task", "silent_observer", "suite_json", "without_faults"]


def _url(target: StoreTarget) -> str:
    """The target as ``--store`` takes it (a SQLite file by its absolute path)."""
    return str(target.path.resolve()) if target.path is not None else target.url


def _resolved(target: StoreTarget) -> StoreTarget:
    """A SQLite target by its absolute path (tasks run in other folders)."""
    return (parse_store_url(target.path.resolve()) if target.path is not None else target)
