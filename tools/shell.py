"""The run_shell tool: one bash command, supervised (see ``engine.tooling.process``).

Output lines stream as ``tool_output`` events while the command runs; the result gives the exit
code, the duration and the head and tail of stdout and stderr. The working directory is confined
to the workspace; the environment is the runtime's minus anything that looks like a secret, plus
what the tool configuration passes in ``ctx.env``. The command is confined as the engine says
(``ctx.confinement``: under the run's sandbox, inside bubblewrap).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.tooling.process import ProcessResult, run_process, start_ticks
from engine.tooling.spec import EventKind, ToolContext, ToolResult, ToolSpec
from turnstile_tools.changes import WATCHER
from turnstile_tools.workspace import rel, resolve_in

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 3600.0


class RunShellArgs(BaseModel):
    """Arguments of run_shell."""

    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, description="A bash command line (pipes, &&, etc.).")
    timeout_s: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT_S,
        description=f"Seconds before the command is stopped (default {DEFAULT_TIMEOUT_S:g}).")
    cwd: str = Field(".", description="Working directory, relative to the workspace root.")


async def run_shell(args: RunShellArgs, ctx: ToolContext) -> ToolResult:
    """Run ``args.command`` with ``bash -c`` in its own process group."""
    cwd = resolve_in(ctx.workspace, args.cwd)
    if isinstance(cwd, ToolResult):
        return cwd
    if not cwd.is_dir():
        return ToolResult.error(f"cwd {args.cwd!r} is not a directory in the workspace")
    timeout = args.timeout_s or ctx.timeout_s or DEFAULT_TIMEOUT_S

    def on_line(stream: str, line: str) -> None:
        ctx.emit(EventKind.TOOL_OUTPUT, {"call_id": ctx.call_id, "stream": stream, "line": line,
                                 "t": time.time()})

    jail = ctx.confinement
    network = jail.network_for(ctx.approved_risk)
    sandbox = jail.describe(network)

    def on_start(pid: int) -> None:
        ctx.emit(EventKind.TOOL_PROCESS, {"call_id": ctx.call_id, "pid": pid, "pgid": pid,
                                  "start_ticks": start_ticks(pid), "command": args.command,
                                  "cwd": rel(ctx.workspace, cwd), "sandbox": sandbox})

    prepared = jail.before(ctx.approved_risk)
    try:
        result = await run_process(
            jail.command(["bash", "-c", args.command], cwd, network, prepared), cwd=cwd,
            env=jail.env(os.environ, ctx.env), timeout_s=timeout, on_line=on_line,
            on_start=on_start)
    finally:
        swept = jail.after(prepared)
    out = _to_result(result, timeout)
    content = out.content
    for verb, paths, why in (
            ("removed", swept.removed, "commands may not create the runtime's own files or "
             "files that make later commands run code"),
            ("restored", swept.restored, "a git configuration may gain only keys that name no "
             "program"),
            ("moved aside (to NAME.refused)", swept.moved, "git on the host would enter "
             "this repository, made by the command: it may hold only what git's own commands "
             "write, and a gitlink's .git must lead into .git/modules/"),
            ("removed", swept.unmade, "the worktree's checkout is not on the host: it was made "
             "in the sandbox's private /tmp, which ends with the command")):
        if paths:
            names = ", ".join(rel(ctx.workspace, Path(p)) for p in paths)
            on_line("stderr", f"[sandbox] {verb} {names}")
            content += f"\n({verb} {names}: {why})"
    for path, why in swept.refused.items():
        name = rel(ctx.workspace, Path(path))
        keys = all(" " not in reason for reason in why)
        on_line("stderr", f"[sandbox] left {name} unchanged: {', '.join(why)}")
        content += (f"\n(left {name} unchanged, nothing of the command's change to it applied: "
                    f"{', '.join(why)}"
                    + ("; a git configuration may gain only keys that name no program and no "
                       "other file)" if keys else ")"))
    if jail.active and out.is_error and "Read-only file system" in content:
        content += f"\n({jail.read_only_note()})"
    if jail.active and out.is_error and "No such file or directory" in content:
        hidden = jail.hidden_note(content)
        content += f"\n({hidden})" if hidden else ""
    removed = swept.removed + swept.restored + swept.moved + swept.unmade
    return ToolResult(content, out.is_error or bool(removed) or bool(swept.refused),
                      {**(out.data or {}), "sandbox": sandbox}, out.truncated,
                      out.omitted_bytes)


def _to_result(r: ProcessResult, timeout: float) -> ToolResult:
    sections = [_status_line(r, timeout)]
    if r.leftovers_killed:
        sections.append("(background processes still running when the command exited were "
                        "terminated)")
    if r.pipes_abandoned:
        sections.append("(a detached process kept the output open after the command exited; "
                        "its further output is not shown)")
    for name, text in (("stdout", r.stdout), ("stderr", r.stderr)):
        if text:
            sections.append(f"{name}:\n{text.rstrip(chr(10))}")
    if not r.stdout and not r.stderr:
        sections.append("(no output)")
    data = {"exit_code": r.exit_code, "duration_s": round(r.duration_s, 3),
            "timed_out": r.timed_out, "omitted_bytes": r.omitted_bytes,
            "output_bytes": r.total_bytes}
    return ToolResult("\n".join(sections), is_error=r.timed_out or r.exit_code != 0, data=data,
                      truncated=r.omitted_bytes > 0, omitted_bytes=r.omitted_bytes)


def _status_line(r: ProcessResult, timeout: float) -> str:
    took = f"{r.duration_s:.2f} s"
    if r.timed_out:
        return (f"timed out after {timeout:g} s; the command's process group was terminated "
                f"(exit code {r.exit_code}); raise timeout_s or make the command finish sooner")
    if r.exit_code < 0:
        return f"killed by {_signal_name(-r.exit_code)} after {took}"
    if r.exit_code == 127:
        return (f"exit code 127 after {took}: command not found; check its name, or that it is "
                "installed and on PATH")
    return f"exit code {r.exit_code} after {took}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


SPEC = ToolSpec(
    name="run_shell", version="1.1.0",
    description="Run a bash command in the workspace (own process group, no stdin). Output "
    "streams live; the result has the exit code, the duration and stdout/stderr (head and tail "
    "kept when long). Background processes are stopped when the command exits. Default "
    f"timeout {DEFAULT_TIMEOUT_S:g} s.",
    input_model=RunShellArgs, handler=run_shell, risk="exec", idempotent=False,
    side_effects=True, timeout_s=DEFAULT_TIMEOUT_S, command_arg="command",
    reported=("exit_code", "timed_out", "omitted_bytes", "output_bytes"), watcher=WATCHER,
    changelog=("1.0.0: bash -c in a process group; streamed lines, head+tail caps, timeout, "
               "scrubbed environment",
               "1.1.0: runs under the run's sandbox (bubblewrap) when there is one; the result "
               "data says how the command was confined",),
)
