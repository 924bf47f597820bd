"""The command line: a thin layer over the library, and the only place errors become exit codes.

Exit codes: 0 completed, 1 the run ended ``failed`` (for ``tools``: a configured MCP server
failed to start), 2 bad input (YAML, arguments, unknown run, unusable database: read-only,
locked beyond the wait, disk full, corrupted, newer schema; a run it stops mid-way stays
resumable; ``sandbox: {mode: required}`` or ``sandbox check`` without confinement),
3 interrupted and resumable, 4 refused by policy in non-interactive mode, 5 parked: waiting
for a person's decision (``approve``/``deny``).
Imports stay inside the commands so ``python -m engine --help`` starts fast.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine.spec.bundled import machine_path
from engine.vocabulary.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_PARKED,
    TurnstileError,
    UsageError,
)
from engine.vocabulary.version import __version__

logger = logging.getLogger(__name__)

DEFAULT_DB = Path(".engine") / "engine.db"


def store_target(args: argparse.Namespace) -> Any:
    """The store, first match wins: ``--store``, ``--db``, ``ENGINE_STORE_URL``, ``ENGINE_DB``,
    ``.engine/engine.db`` in the current directory (``engine.store.url``)."""
    from engine.store.url import store_target as target

    return target(getattr(args, "store", None), getattr(args, "db", None))


def _runs(args: argparse.Namespace) -> Any:
    """The front door on the store the arguments name (nothing is opened yet)."""
    from engine.door import Runs

    return Runs(store_target(args))


def _open_store(args: argparse.Namespace, *, must_exist: bool = False,
                reading: bool = False) -> Any:
    """The run database; ``reading`` commands also work where it cannot be written."""
    from engine.runs.reading import require_existing

    target = store_target(args)
    if must_exist:
        require_existing(target)
    return target.open(durability=getattr(args, "durability", None), reading=reading)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


# -- run and resume ---------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    task = _task_text(args)
    runs = _runs(args)
    observer, prompter = _ui(args)
    # --json alone: nobody is asked (the policy decides) unless --approval interactive says so
    asks = args.approval == "interactive" or not args.json
    prepared = runs.prepare(
        args.machine, task=task, golden=args.golden, workspace=args.workspace,
        model=args.model, approval=args.approval, policy=args.policy,
        mcp_config=args.mcp_config, model_options=_model_options(args),
        durability=args.durability, observer=observer, prompter=prompter if asks else None)
    for note in () if args.quiet else prepared.notes:
        observer.line(f"[dim]{note}[/]")
    return _drive_on_backend(args, runs, prepared, observer)


def _task_text(args: argparse.Namespace) -> str | None:
    """``--task`` or the text of ``--task-file``; an empty or blank task is refused."""
    if args.task is not None and args.task_file:
        raise UsageError("give --task or --task-file, not both")
    if args.task_file:
        try:
            task: str | None = Path(args.task_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise UsageError(f"--task-file {args.task_file}: {reason}") from exc
        where = f"--task-file {args.task_file}"
    else:
        task, where = args.task, "--task"
    if task is not None and not task.strip():
        raise UsageError(f"{where} is empty: say what the run should do (or leave the task out "
                         "to run the offline demo)")
    return task


def cmd_resume(args: argparse.Namespace) -> int:
    runs = _runs(args)
    observer, prompter = _ui(args)
    prepared = runs.prepare_resume(
        args.run_id, model=args.model, approval=args.approval, policy=args.policy,
        model_options=_model_options(args), allow_changed_machine=args.allow_changed_machine,
        durability=args.durability, observer=observer, prompter=prompter)
    if not args.quiet:
        for note in prepared.notes:
            observer.line(f"[dim]{note}[/]")
        state = prepared.session.state
        observer.line(f"resuming run {prepared.run_id} at step {state.step} "
                      f"in state {state.state}")
    return _drive_on_backend(args, runs, prepared, observer)


def _drive_on_backend(args: argparse.Namespace, runs: Any, prepared: Any,
                      observer: Any) -> int:
    """Drive a prepared run here or, with ``--backend temporal``, through the workers."""
    if args.backend != "temporal":
        return _drive(args, runs, prepared, observer)
    from engine.temporal.commands import drive_command

    try:
        return drive_command(args, prepared.store, prepared.session, observer, _report)
    finally:
        observer.close()  # the lines the run's loop held when it ended


def _model_options(args: argparse.Namespace) -> dict[str, Any]:
    from engine.models.options import parse_cli_options

    return parse_cli_options(getattr(args, "model_option", None))


def _ui(args: argparse.Namespace) -> tuple[Any, Any]:
    from engine.cli.plain_output import make_ui

    # --json: stdout carries the final JSON alone; the live output goes to stderr.
    return make_ui(sys.stderr if args.json else sys.stdout, quiet=args.quiet)


def _drive(args: argparse.Namespace, runs: Any, prepared: Any, observer: Any) -> int:
    from functools import partial

    import anyio

    from engine.core.interrupts import drive_until_interrupted
    from engine.vocabulary.errors import InterruptedRun

    gc.freeze()  # the start-up heap (modules, schemas, the machine) is never garbage: keep it
    try:         # out of the collections the step loop triggers
        result = anyio.run(partial(runs.drive, prepared, driver=drive_until_interrupted))
    except InterruptedRun:
        _summary(args, prepared.store, prepared.run_id, observer)
        return EXIT_INTERRUPTED
    finally:
        observer.close()  # the lines the run's loop held when it ended
    return _report(args, prepared.store, prepared.run_id, observer, result)


def _report(args: argparse.Namespace, store: Any, run_id: str, observer: Any,
            result: Any) -> int:
    """The summary and exit code of a drive that ended (0, 1, or 5 for a parked run)."""
    if result.status == "waiting_approval":
        if args.json:
            _summary(args, store, run_id, observer)
        print(_parked_line(args, store, run_id, result.error),
              file=sys.stderr if args.json else sys.stdout)
        return EXIT_PARKED
    _summary(args, store, run_id, observer, result.error)
    return 0 if result.status == "completed" else EXIT_FAILED


def _parked_line(args: argparse.Namespace, store: Any, run_id: str, error: str | None) -> str:
    """The line of a parked run: its calls, and the commands that decide them."""
    from engine.permissions.parking import parked_line

    requests = store.approval_requests(run_id)
    if not requests:
        return error or f"run {run_id} is waiting for approval"
    return parked_line(run_id, requests, store=_runs(args).location)


def _summary(args: argparse.Namespace, store: Any, run_id: str, observer: Any,
             error: str | None = None) -> None:
    info = store.get_run(run_id)
    runs = _runs(args)
    _write_trace(store, run_id, runs.target.data_dir / "traces")
    if args.json:
        _print_json(info.to_json())
        return
    cost = "unknown" if info.cost_usd is None else f"${info.cost_usd:.4f}"
    color = {"completed": "green", "failed": "red"}.get(info.status, "yellow")
    observer.line("")
    observer.line(f"[bold {color}]{info.status}[/] run {info.run_id}: {info.steps} steps, "
                  f"state {info.state}, {info.input_tokens} in / {info.output_tokens} out "
                  f"tokens, cost {cost}")
    if error:
        observer.line(f"[red]error:[/] {error}")
    observer.line(f"  workspace: {info.workspace}")
    observer.line(f"  database:  {runs.location}")
    observer.line(f"  inspect:   {runs.hint('show', info.run_id)}")
    if info.status in ("interrupted", "failed", "crashed"):
        observer.line(f"  resume:    {runs.hint('resume', info.run_id)}")


def _write_trace(store: Any, run_id: str, traces: Path) -> None:
    """Write ``.engine/traces/RUN_ID.json`` beside the database, and, when
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, send the complete spans the run's live export has
    not delivered (none, normally). Neither may fail the run: problems are warnings."""
    from engine.tracing.otlp import export_otlp, otlp_configured
    from engine.tracing.trace import write_trace_file

    try:
        write_trace_file(store, run_id, traces)
    except OSError as exc:
        print(f"warning: could not write the trace of {run_id}: {exc}", file=sys.stderr)
    if otlp_configured():
        try:
            export_otlp(store, run_id, new_only=True)
        except TurnstileError as exc:
            print(f"warning: OTLP export of {run_id} failed: {exc}", file=sys.stderr)


# -- inspection -------------------------------------------------------------------------


def cmd_runs(args: argparse.Namespace) -> int:
    front = _runs(args)
    runs = front.list_runs()
    if args.json:
        _print_json([r.to_json() for r in runs])
        return 0
    if not runs:
        print(f"no runs yet (start one with: {front.hint('run', 'coding_agent')})")
        return 0
    print(f"{'RUN ID':<24} {'MACHINE':<16} {'STATUS':<12} {'STATE':<16} {'STEPS':>5} "
          f"{'TOKENS':>8}  CREATED")
    for r in runs:
        created = r.to_json()["created_at"][:19].replace("T", " ")
        print(f"{r.run_id:<24} {r.machine:<16} {r.status:<12} {r.state:<16} {r.steps:>5} "
              f"{r.input_tokens + r.output_tokens:>8}  {created}")
        if r.forked_from is not None:
            print(f"{'':<24} forked from {r.forked_from.run_id} at step {r.forked_from.step}")
        if r.status == "failed" and r.error:
            print(f"{'':<24} error: {' '.join(r.error.split())[:200]}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from engine.cli.show import show_json, show_text

    store = _open_store(args, must_exist=True, reading=True)
    if args.json:
        _print_json(show_json(store, args.run_id))
    else:
        sys.stdout.write(show_text(store, args.run_id))
    return 0


def cmd_fork(args: argparse.Namespace) -> int:
    runs = _runs(args)
    made = runs.fork(args.run_id, args.step, workspace=args.workspace,
                     allow_partial=args.allow_partial)
    if args.json:
        _print_json(made.to_json())
        return 0
    origin = made.forked_from
    print(f"forked run {origin.run_id} at step {origin.step} ({made.state}): "
          f"new run {made.run_id}, interrupted")
    print(f"  workspace: {made.workspace}"
          f"{'' if made.exact else ' (partial: some files hold their latest content)'}")
    for missing in made.not_rebuilt:
        print(f"    not rebuilt: {missing.path}: {missing.reason}")
    print(f"  continue:  {runs.hint('resume', made.run_id)}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    store = _open_store(args, must_exist=True, reading=True)
    info = store.get_run(args.run_id)
    rows = store.audit(info.run_id)
    if args.json:
        _print_json([r.to_json() for r in rows])
        return 0
    if not rows:
        print(f"run {info.run_id}: no permission decisions")
    for r in rows:
        server = f" server={r.server}({r.trust})" if r.server else ""
        print(f"step {r.step:>3} {r.decision:<5} {r.tool:<24} risk={r.risk:<11} "
              f"by={r.decided_by:<12} rule={r.rule or '-'}{server}  {r.reason}")
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    from engine.tracing.otlp import export_otlp
    from engine.tracing.to_text import trace_text
    from engine.tracing.trace import build_trace

    store = _open_store(args, must_exist=True, reading=True)
    info = store.get_run(args.run_id)
    if args.otlp:
        count = export_otlp(store, info.run_id)
        print(f"exported {count} spans of run {info.run_id}")
        return 0
    if args.json:
        _print_json(build_trace(store, info.run_id))
    else:
        sys.stdout.write(trace_text(build_trace(store, info.run_id)))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """``PRAGMA quick_check`` over a SQLite file (every row read on a server), then every
    run's rows read back through the engine's decoders: 0 when sound; 2, each damaged run on
    stdout and one line on stderr if not."""
    from engine.store.readback import damaged_runs

    target = store_target(args)
    path = target.display
    how = "PRAGMA quick_check" if target.kind == "sqlite" else "reading every row"
    store = _open_store(args, must_exist=True, reading=True)
    problems = store.check()
    damaged = [] if problems else damaged_runs(store)
    if args.json:
        _print_json({"database": str(path), "ok": not problems and not damaged,
                     "problems": problems, "damaged_runs": [r for r, _ in damaged]})
    elif not problems and not damaged:
        print(f"{path}: ok ({how} and every run read back found no problem)")
    for run_id, reason in [] if args.json else damaged:
        print(f"damaged run {run_id}: {reason.split('; it cannot')[0]}")
    if damaged:
        print(f"error: {path}: {len(damaged)} run(s) with rows the engine cannot read: "
              f"{', '.join(r for r, _ in damaged)} (show and resume refuse them; the other "
              "runs are sound)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not problems:
        return 0
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    print(f"error: {path}: the database is corrupted: {len(problems)} problem(s) found by "
          f"{how}, first: {problems[0]}{more}", file=sys.stderr)
    return EXIT_BAD_INPUT


# -- parked approvals ---------------------------------------------------------------------


def cmd_approvals(args: argparse.Namespace) -> int:
    rows = _runs(args).pending_approvals()
    if args.json:
        _print_json([r.to_json() for r in rows])
        return 0
    if not rows:
        print("no pending approvals")
    for r in rows:
        what = r.command or json.dumps(dict(r.arguments), ensure_ascii=False)[:80]
        print(f"{r.run_id}  {r.call_id}  {r.tool:<12} risk={r.risk:<11} "
              f"age={r.age_s:.0f}s rule={r.rule or '-'}  {what}")
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    from engine.temporal.hints import resume_hint
    from engine.vocabulary.errors import DecisionUndeliveredError

    runs = _runs(args)
    verb = "approved" if args.command == "approve" else "denied"
    try:
        if args.command == "approve":
            done = runs.approve(args.run_id, args.call_id, always=args.always, channel="cli")
        else:
            done = runs.deny(args.run_id, args.call_id, reason=args.reason or "",
                             channel="cli")
    except DecisionUndeliveredError as exc:  # stored, but no workflow takes it up
        print(f"{verb} call {args.call_id} of run {exc.run_id}")
        store = _open_store(args, must_exist=True, reading=True)
        print(f"error: {exc}; start one with: {resume_hint(args, store, exc.run_id)}",
              file=sys.stderr)
        return exc.exit_code
    told = done.notice  # a run on Temporal continues on a worker
    print(f"{verb} call {done.call_id} ({done.tool}) of run {done.run_id} by {done.decided_by}"
          + (f"; {told}" if told else "" if args.resume
             else f"; continue with: {runs.hint('resume', done.resume_run or done.run_id)}"))
    if not args.resume or told:
        return 0
    resume_args = argparse.Namespace(
        run_id=done.resume_run or done.run_id, model=None, approval=None, policy=None,
        model_option=None, allow_changed_machine=False, json=args.json, durability=None, db=args.db,
        store=args.store, quiet=False,
        backend="local")
    code = cmd_resume(resume_args)
    from engine.permissions.parking import call_outcome

    print(call_outcome(_open_store(args, reading=True), done.run_id, done.call_id),
          file=sys.stderr if args.json else sys.stdout)
    return code


def cmd_serve(args: argparse.Namespace) -> int:
    from engine.web.app import serve
    from engine.web.security import check_bind

    check_bind(args.host, args.token)
    store = _open_store(args)  # creates or migrates the database before the first request
    store.close()
    tasks = Path(args.tasks).resolve() if args.allow_start else None
    if tasks is not None and not tasks.is_dir():
        raise UsageError(f"--tasks {args.tasks}: no such directory")
    target = store_target(args)
    serve(target if target.path is None else target.path.resolve(), args.host, args.port,
          args.token, tasks)
    return 0


def cmd_acp(args: argparse.Namespace) -> int:
    """``acp``: serve the Agent Client Protocol on stdio, for an editor (the ``acp`` extra)."""
    from engine.ide.server import EXTRA_HINT, available, serve

    if not available():
        print(EXTRA_HINT, file=sys.stderr)
        return EXIT_BAD_INPUT
    return serve(_runs(args), args.machine)


# -- machines -----------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    """Every file checked; ``--json``: one object per file, problems with file and line."""
    from engine.actions.registry import ACTIONS
    from engine.validation import load_machine
    from engine.vocabulary.errors import SpecError

    results: list[dict[str, Any]] = []
    for path in args.machines:
        try:
            spec = load_machine(machine_path(path), ACTIONS)
            _check_fixed_tools(spec)
        except SpecError as exc:
            results.append({"path": path, "ok": False, "problems": [
                {"file": p.file, "line": p.line, "message": p.message} for p in exc.problems]})
            if not args.json:
                for problem in exc.problems:
                    print(str(problem), file=sys.stderr)
            continue
        results.append({"path": path, "ok": True, "machine": spec.name, "kind": spec.kind,
                        "states": len(spec.states), "transitions": len(spec.transitions()),
                        "problems": []})
        if not args.json:
            print(f"{path}: ok ({len(spec.states)} states, {len(spec.transitions())} "
                  "transitions)")
    if args.json:
        _print_json(results)
    return EXIT_BAD_INPUT if any(not r["ok"] for r in results) else 0


def _check_fixed_tools(spec: Any) -> None:
    """A ``run_tool`` state's tool must be one the machine lists in ``tools:`` (a name not
    built in is given in code). A tool named by import path may go by another name
    (``@tool(name=...)``), known once imported: the run checks those."""
    from engine.tooling.functions import is_reference
    from engine.validation.check import fixed_tool_problems
    from engine.vocabulary.errors import SpecError

    refs = [t for t in spec.tools if is_reference(t)]
    offered = [t for t in spec.tools if not is_reference(t)]
    problems = fixed_tool_problems(spec, offered, unsure=bool(refs))
    if problems:
        raise SpecError(problems)


def cmd_diagram(args: argparse.Namespace) -> int:
    """DOT or Mermaid text on stdout, or a file whose suffix picks the format."""
    from engine.actions.registry import ACTIONS
    from engine.spec.diagram import diagram_format, diagram_text, render
    from engine.validation import load_machine

    spec = load_machine(machine_path(args.machine), ACTIONS)
    kw: dict[str, Any] = {}
    if args.run:
        store = _open_store(args, must_exist=True)
        info = store.get_run(args.run)
        kw = {"path_taken": [(s, t, d) for _, s, t, d in store.transitions(info.run_id)],
              "current": info.state}
    output = Path(args.output) if args.output else None
    fmt = diagram_format(args.format, output)
    if output is None:
        text = diagram_text(spec, fmt, **kw)
        if args.json:
            _print_json({"machine": spec.name, "format": fmt, "output": None, "source": text})
        else:
            sys.stdout.write(text)
        return 0
    out = render(spec, output, fmt, **kw)
    if args.json:
        _print_json({"machine": spec.name, "format": fmt, "output": str(out),
                     "bytes": out.stat().st_size})
    else:
        print(f"wrote {out}")
    return 0


# -- tools, policy, mcp, eval -------------------------------------------------------------


def cmd_tools(args: argparse.Namespace) -> int:
    from engine.cli.toolview import list_tools

    rows = list_tools(machine_path(args.machine) if args.machine else None,
                      Path(args.mcp_config) if args.mcp_config else None, Path.cwd())
    failed = [r for r in rows if r.get("status") == "failed"]
    if args.json:
        _print_json(rows)
    else:
        for r in rows:
            print(_tool_line(r))
    for r in failed:
        print(f"error: MCP server {r['server']} failed to start: {r['error']}", file=sys.stderr)
    return EXIT_FAILED if failed else 0


def _tool_line(r: dict[str, Any]) -> str:
    if r.get("status") == "failed":
        return f"{r['source']:<40} failed to start: {r['error']}"
    return (f"{r['name']:<40} {r['version']:<18} risk={r['risk']:<11} "
            f"decision={r['decision']:<5} {r['source']}")


def cmd_policy(args: argparse.Namespace) -> int:
    from engine.permissions.policy import check_path_json, check_shell_json

    workspace = Path(args.workspace or ".").resolve()
    if args.policy_command == "check-shell":
        from engine.session.compose import shell_tool_name

        out = check_shell_json(args.command, workspace, approval=args.approval,
                               tool=shell_tool_name())
        text = f"{out['decision']} (risk {out['risk']}): {out['reason']}"
        if args.approval == "auto":
            out["approval"] = "auto"
            if out["decision"] == "ask":
                text += " (--approval auto runs it without asking)"
    else:
        if args.stdin == (args.path is not None):
            raise UsageError("policy check-path: give PATH or --stdin (one of them)")
        path = sys.stdin.buffer.read().decode("utf-8", "surrogateescape") if args.stdin \
            else args.path
        out = check_path_json(path, workspace)
        text = f"{out['decision']} ({'inside' if out['inside'] else 'outside'} {workspace}): " \
               f"{out['resolved']}: {out['reason']}"
    if args.json:
        _print_json(out)
    else:
        print(text)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from turnstile_tools.project_server import serve

    serve(Path(args.root).resolve(), args.http)
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    """``sandbox check``: confine a probe command; exit 0 when it worked (even with a limit not
    enforced here), 2 (and why) if not."""
    from engine.sandbox import enforced_limits, home_report, probe

    result = probe(fresh=True)
    limits = enforced_limits(result)
    home = home_report()
    if args.json:
        _print_json({**result.to_json(), "limits": limits, "home": home})
    elif result.ok:
        loose = [name for name, held in limits.items() if not held]
        print(f"ok: {result.reason}; probe command started and ended in "
              f"{result.seconds * 1000:.1f} ms (workspace writable, / read-only, no network, "
              "no capabilities)"
              + (f"; not enforced here: {', '.join(loose)} limit" if loose else
                 "; processes, /tmp, memory, CPU time and file size bounded"))
        print(f"home folders hidden: {', '.join(home['hidden']) or 'none'}; shown read-only "
              f"in them: {', '.join(home['shown']) or 'nothing'} (more with sandbox.readable)")
        if home["git_settings_left_out"]:
            print("git's global configuration is a copy without: "
                  + ", ".join(home["git_settings_left_out"]))
    else:
        print(f"unavailable: {result.reason}. With sandbox mode auto, shell commands run "
              "unconfined; with mode required, runs refuse to start")
    return 0 if result.ok else EXIT_BAD_INPUT


def cmd_replay(args: argparse.Namespace) -> int:
    from engine.harness.replay import replay_main

    return replay_main(args)


def cmd_eval(args: argparse.Namespace) -> int:
    from engine.harness.evals import main as eval_main

    return eval_main(args)


# -- parser ---------------------------------------------------------------------------------


def _common_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="database file (default .engine/engine.db, or $ENGINE_DB)")


def _common_store(p: argparse.ArgumentParser) -> None:
    _common_db(p)
    p.add_argument("--store", metavar="URL",
                   help="the store: a path or sqlite:///PATH (SQLite), or postgresql://... "
                        "(default $ENGINE_STORE_URL; over --db and $ENGINE_DB)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Turnstile: agents and workflows as persisted finite-state machines.")
    parser.add_argument("--version", action="version", version=f"turnstile {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_run(sub)
    _add_approvals(sub)
    _add_serve(sub)
    _add_inspection(sub)
    _add_machines(sub)
    _add_tools(sub)
    return parser


def _prog() -> str:
    """The name usage lines show: the console script's, or ``python -m engine``."""
    return "turnstile" if Path(sys.argv[0]).name == "turnstile" else "python -m engine"


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run a machine (no task: the bundled demo, offline)")
    p.add_argument("machine", help="machine YAML (e.g. machines/coding_agent.yaml) or the "
                   "name of a bundled machine (e.g. coding_agent)")
    p.add_argument("--task", help="the task text")
    p.add_argument("--task-file", help="read the task text from a file")
    p.add_argument("--golden", help="run one golden task folder (fixture, turns, policy)")
    p.add_argument("--workspace", help="workspace for --task (default: current directory)")
    p.add_argument("--model", help="openai:M | anthropic:M | ollama:M | scripted[:PATH]")
    _model_option_arg(p)
    _approval_args(p)
    p.add_argument("--mcp-config", help='MCP servers file ({"mcpServers": {...}})')
    p.add_argument("--durability", choices=["normal", "full"],
                   help="full: fsync every step commit (default normal)")
    p.add_argument("--json", action="store_true", help="print the final run as JSON")
    _quiet_arg(p)
    _common_store(p)
    _backend_args(p, detach=True)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("resume", help="continue an interrupted or crashed run")
    p.add_argument("run_id")
    p.add_argument("--model", help="switch the model (history is converted)")
    _model_option_arg(p)
    _approval_args(p)
    p.add_argument("--allow-changed-machine", action="store_true",
                   help="resume although the machine YAML changed")
    p.add_argument("--durability", choices=["normal", "full"])
    p.add_argument("--json", action="store_true")
    _quiet_arg(p)
    _common_store(p)
    _backend_args(p, detach=True)
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("worker", help="serve runs started with --backend temporal (several "
                       "workers, on several machines, may serve one task queue)")
    p.add_argument("--db", help="serve only the runs of this SQLite database (default: the "
                   "store each run names)")
    p.add_argument("--store", metavar="URL",
                   help="serve only the runs of this store, opened with this URL (a path, "
                        "sqlite:///PATH or postgresql://...; default $ENGINE_STORE_URL, else "
                        "the store each run names)")
    _backend_args(p)
    p.set_defaults(func=cmd_worker)


def _backend_args(p: argparse.ArgumentParser, *, detach: bool = False) -> None:
    from engine.temporal.commands import add_backend_args

    add_backend_args(p, detach=detach)


def cmd_worker(args: argparse.Namespace) -> int:
    from engine.temporal.commands import cmd_worker as worker

    return worker(args)


def _quiet_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true",
                   help="no live output: print only the summary at the end")


def _model_option_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-option", action="append", metavar="KEY=VALUE",
                   help="model setting over the machine's model_options (repeatable): "
                        "temperature, top_p, max_tokens, reasoning_effort, seed, stop")


def _approval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--approval", choices=["interactive", "policy", "auto", "deny", "park"],
                   help="who decides `ask` (default: interactive on a terminal, else policy; "
                        "park: wait for `approve`/`deny`, exit 5)")
    p.add_argument("--policy", help="policy YAML (rules, default, on_unknown_effect)")


def _add_approvals(sub: Any) -> None:
    p = sub.add_parser("approvals", help="pending approval requests of parked runs")
    p.add_argument("--json", action="store_true")
    _common_store(p)
    p.set_defaults(func=cmd_approvals)
    for name, text in (("approve", "allow a parked call (recorded in the audit log)"),
                       ("deny", "deny a parked call; the model is told why")):
        p = sub.add_parser(name, help=text)
        p.add_argument("run_id")
        p.add_argument("call_id")
        if name == "approve":
            p.add_argument("--always", metavar="SCOPE",
                           help="also allow this capability for the rest of the run "
                                "(SCOPE: run, or the capability `approvals` shows)")
        else:
            p.add_argument("--reason", help="why (the model sees it)")
        p.add_argument("--resume", action="store_true", help="continue the run now")
        p.add_argument("--json", action="store_true", help="with --resume: the run as JSON")
        _common_store(p)
        p.set_defaults(func=cmd_decide)


def _add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="the web console: runs, live runs, approvals")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--token", help="required on every request (needed off loopback)")
    p.add_argument("--allow-start", action="store_true",
                   help="let the runs page start a run of a golden task (approvals park)")
    p.add_argument("--tasks", default="golden_tasks",
                   help="with --allow-start: the golden tasks folder (default golden_tasks)")
    _common_store(p)
    p.set_defaults(func=cmd_serve)
    p = sub.add_parser("acp", help="serve the Agent Client Protocol on stdio (an editor starts "
                       "it: Zed, JetBrains IDEs, ...)")
    p.add_argument("--machine", default="coding_agent",
                   help="the machine a session runs (default: the bundled coding_agent)")
    _common_store(p)
    p.set_defaults(func=cmd_acp)


def _add_inspection(sub: Any) -> None:
    for name, func, text in (("runs", cmd_runs, "list runs, oldest first"),):
        p = sub.add_parser(name, help=text)
        p.add_argument("--json", action="store_true")
        _common_store(p)
        p.set_defaults(func=func)
    for name, func, text in (("show", cmd_show, "a run: states, transitions, checkpoints"),
                             ("audit", cmd_audit, "a run's permission decisions")):
        p = sub.add_parser(name, help=text)
        p.add_argument("run_id")
        p.add_argument("--json", action="store_true")
        _common_store(p)
        p.set_defaults(func=func)
    p = sub.add_parser("fork", help="a new run at step N of a run, its workspace as it was")
    p.add_argument("run_id")
    p.add_argument("--step", type=int, required=True,
                   help="the step to begin at (show --json: steps_detail[].step)")
    p.add_argument("--workspace", help="the new run's folder (default: beside the original's, "
                   "named after the new run)")
    p.add_argument("--allow-partial", action="store_true",
                   help="fork although some file cannot be rebuilt as it was (it keeps its "
                        "latest content)")
    p.add_argument("--json", action="store_true")
    _common_store(p)
    p.set_defaults(func=cmd_fork)
    p = sub.add_parser("check", help="full integrity check of the database (exit 2 if damaged)")
    p.add_argument("--json", action="store_true")
    _common_store(p)
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("trace", help="a run's trace: timeline, JSON, or OTLP export")
    p.add_argument("run_id")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true")
    group.add_argument("--otlp", action="store_true",
                       help="export to $OTEL_EXPORTER_OTLP_ENDPOINT")
    _common_store(p)
    p.set_defaults(func=cmd_trace)


def _add_machines(sub: Any) -> None:
    p = sub.add_parser("validate", help="check machine files (exit 2 on any problem)")
    p.add_argument("machines", nargs="+")
    p.add_argument("--json", action="store_true",
                   help="one object per file: ok, states, transitions, problems (file, line)")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("diagram", help="draw a machine: DOT or Mermaid text, or .svg/.png/.pdf")
    p.add_argument("machine")
    p.add_argument("-o", "--output", help="output file; the suffix picks the format (.dot, .svg, "
                   ".png, .pdf, .mmd, .md)")
    p.add_argument("-f", "--format", choices=["dot", "mermaid"],
                   help="text format on stdout (default dot); mermaid is stateDiagram-v2")
    p.add_argument("--run", help="highlight this run's path and current state")
    p.add_argument("--json", action="store_true",
                   help="say where the file went (or give the text) as JSON")
    _common_store(p)
    p.set_defaults(func=cmd_diagram)


def _add_tools(sub: Any) -> None:
    p = sub.add_parser("tools", help="the tools a machine would see, with risk and decision "
                       "(exit 1 when a configured MCP server fails to start)")
    p.add_argument("machine", nargs="?")
    p.add_argument("--mcp-config")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_tools)

    p = sub.add_parser("policy", help="check a shell command or a path against the policy")
    psub = p.add_subparsers(dest="policy_command", required=True)
    q = psub.add_parser("check-shell", help="decision for one shell command string")
    q.add_argument("command")
    q.add_argument("--workspace")
    q.add_argument("--approval", choices=["policy", "auto"], default="policy",
                   help="auto: the decision a run under --approval auto acts on (a command "
                        "whose program cannot be named before it runs, or that reads "
                        "credentials, is deny there: nobody sees it)")
    q.add_argument("--json", action="store_true")
    q = psub.add_parser("check-path", help="is PATH inside the workspace whitelist?")
    q.add_argument("path", nargs="?")
    q.add_argument("--stdin", action="store_true",
                   help="read the path from standard input, as raw bytes (a NUL included)")
    q.add_argument("--workspace", required=True)
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_policy)

    p = sub.add_parser("mcp", help="Turnstile's own MCP server")
    msub = p.add_subparsers(dest="mcp_command", required=True)
    q = msub.add_parser("serve-project", help="serve read_project_file/search_project_text")
    q.add_argument("--root", default=".")
    q.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on 127.0.0.1")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("sandbox", help="can shell commands be confined here (bubblewrap)?")
    ssub = p.add_subparsers(dest="sandbox_command", required=True)
    q = ssub.add_parser("check", help="confine a probe command: exit 0 if it works, 2 if not")
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sandbox)

    p = sub.add_parser("eval", help="run golden tasks and print a table")
    p.add_argument("dir", nargs="?", default="golden_tasks")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE; "
                   "`--json -` prints them on stdout (the table goes to stderr)")
    p.add_argument("-k", dest="pattern", help="only tasks whose name contains PATTERN")
    p.add_argument("--model", help="run against a real model instead of the scripts")
    _model_option_arg(p)
    p.add_argument("--repeat", type=int, default=1, help="run each task N times")
    p.add_argument("--db", help="record every task's run in this database (nothing deleted) "
                   "instead of a fresh temporary one per task (default $ENGINE_DB if set)")
    p.add_argument("--store", metavar="URL", help="record every task's run in this store (a "
                   "path, sqlite:///PATH or postgresql://...; default $ENGINE_STORE_URL)")
    _backend_args(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("replay", help="re-run a recorded golden run with its recorded model "
                       "outputs and report where tool results diverge")
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")
    p.add_argument("--keep", action="store_true",
                   help="keep the replay's database even without a divergence")
    _common_db(p)
    p.set_defaults(func=cmd_replay)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch, and map every ``TurnstileError`` to one line and its exit code.

    Output is best effort (``engine.cli.streams``): a closed pipe or terminal never ends a run.
    """
    from engine.cli import streams

    saved = streams.guard()
    try:
        return _dispatch(argv)
    finally:
        streams.release(saved)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _dispatch(argv: Sequence[str] | None) -> int:
    level = os.environ.get("ENGINE_LOG", "WARNING").upper() or "WARNING"
    if level not in LOG_LEVELS:
        print(f"error: ENGINE_LOG={os.environ['ENGINE_LOG']!r}: expected one of "
              f"{', '.join(LOG_LEVELS).lower()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except TurnstileError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _one_line(exc: TurnstileError) -> str:
    """The error as one line: a machine's first problem, and how to see the others."""
    from engine.vocabulary.errors import SpecError

    if isinstance(exc, SpecError) and len(exc.problems) > 1:
        first = exc.problems[0]
        from engine.vocabulary.hints import command

        return f"{first} (and {len(exc.problems) - 1} more: {command('validate', first.file)})"
    return "; ".join(line for line in str(exc).splitlines() if line.strip())
