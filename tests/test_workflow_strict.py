"""Strict workflows: a state handles only what its action can emit with its params, and the
action keeps that promise at run time. Templates are checked by ``validate``, with file:line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from engine.actions.registry import ACTIONS
from engine.core.runner import RunResult
from engine.validation import load_machine
from engine.vocabulary.errors import SpecError
from tests.conftest import ROOT, EngineCLI
from tests.inprocess import InProcess

STRICT = """\
name: strict_review
kind: workflow
initial: collect
tools: [run_shell, write_file]
states:
  collect:
    action: run_tool
    with: {tool: run_shell, args: {command: "COMMAND"}, on_error: fail_run}
    on: {ok: review}
  review:
    action: call_model
    with:
      tools: false
      prompt: |
        Review this output.
        {{ results.collect.output }}
    on: {final: done}
  done: {final: true}
"""

TURNS = """\
- text: "Looks fine."
  tool_calls:
    - {name: write_file, args: {path: sneaky.txt, content: "not offered"}}
"""


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_machine(path, ACTIONS)
    return [str(p) for p in info.value.problems]


def test_strict_workflow_validates(tmp_path: Path, cli: EngineCLI) -> None:
    path = write(tmp_path, STRICT.replace("COMMAND", "echo hi"))
    spec = load_machine(path, ACTIONS)
    assert spec.states["collect"].on == {"ok": "review"}
    proc = cli("validate", str(path))
    assert proc.returncode == 0 and proc.stdout.strip() == f"{path}: ok (3 states, 2 transitions)"


def test_default_params_still_demand_both_triggers(tmp_path: Path) -> None:
    text = STRICT.replace(", on_error: fail_run", "").replace("tools: false", "tools: true")
    path = write(tmp_path, text.replace("COMMAND", "echo hi"))
    assert problems(path) == [
        f"{path}:9: state 'collect': action 'run_tool' can emit 'failed' but the state has no "
        "transition for it (add `on: {failed: <state>}`)",
        f"{path}:17: state 'review': action 'call_model' can emit 'tool_calls' but the state has "
        "no transition for it (add `on: {tool_calls: <state>}`)",
    ]


def test_a_transition_the_params_rule_out_is_not_an_error(tmp_path: Path) -> None:
    text = STRICT.replace("on: {ok: review}", "on: {ok: review, failed: done}")
    spec = load_machine(write(tmp_path, text.replace("COMMAND", "echo hi")), ACTIONS)
    assert spec.states["collect"].on["failed"] == "done"


def _run_strict(tmp_path: Path, command: str) -> tuple[InProcess, RunResult, Path]:
    machine = write(tmp_path, STRICT.replace("COMMAND", command))
    engine = InProcess(tmp_path)
    workspace = engine.workspace()
    result = engine.run(yaml.safe_load(TURNS), machine=machine, task="review",
                        approval="auto", workspace=workspace)
    return engine, result, workspace


def test_tools_false_drops_tool_calls_and_ends_final(tmp_path: Path) -> None:
    engine, result, workspace = _run_strict(tmp_path, "echo hello-from-tool")
    assert (result.status, result.state.state, result.state.step) == ("completed", "done", 2)
    assert not (workspace / "sneaky.txt").exists()
    assert [t[2] for t in engine.store.transitions(result.state.run_id)] == ["ok", "final"]
    engine.close()


def test_fail_run_ends_the_run_failed_with_the_tools_error(tmp_path: Path) -> None:
    engine, result, _ = _run_strict(tmp_path, "echo broken-build >&2; exit 3")
    assert (result.status, result.state.state, result.state.step) == ("failed", "collect", 0)
    assert "collect: run_shell failed" in (result.error or "")
    assert engine.store.get_run(result.state.run_id).error == result.error
    engine.close()


# -- templates ------------------------------------------------------------------------------


def test_unclosed_expression_is_reported_at_its_line(tmp_path: Path, cli: EngineCLI) -> None:
    text = STRICT.replace("COMMAND", "echo {{ task ")
    path = write(tmp_path, text)
    assert problems(path) == [
        f"{path}:8: state 'collect': with.args.command: template syntax: unexpected end of "
        "template, expected 'end of print statement'."]
    proc = cli("validate", str(path))
    assert proc.returncode == 2 and proc.stderr.startswith(f"{path}:8: ")
    assert "Traceback" not in proc.stderr


def test_reference_to_a_missing_state_and_unknown_name(tmp_path: Path) -> None:
    text = STRICT.replace("{{ results.collect.output }}",
                          "{{ results.colect.output }} {{ tasks }}\n"
                          "        {% for r in results %}{{ r }} {{ results['done'] }}{% endfor %}")
    path = write(tmp_path, text.replace("COMMAND", "echo hi"))
    assert problems(path) == [
        f"{path}:16: state 'review': with.prompt: unknown name 'tasks' in a template; templates "
        "see task, results, data, workspace",
        f"{path}:16: state 'review': with.prompt: results.colect: 'colect' is not a state "
        "(states: collect, review, done)",
    ]


def test_bundled_machines_templates_are_valid() -> None:
    for path in sorted((ROOT / "machines").glob("*.yaml")):
        load_machine(path, ACTIONS)


UNKNOWN_TOOL = """\
name: typo
kind: workflow
initial: listing
tools: [list_files]
states:
  listing:
    action: run_tool
    with: {tool: lst_files, args: {path: .}}
    on: {ok: reading, failed: done}
  reading:
    action: run_tool
    with:
      tool: read_file
      args: {path: a.txt}
    on: {ok: done, failed: done}
  done: {final: true}
"""


def test_a_run_tool_state_naming_an_unknown_tool_is_reported_at_its_line(
        tmp_path: Path, cli: EngineCLI) -> None:
    """``validate`` and ``run`` both: a typo and a built-in the machine does not list, each
    with its line and the fix; the run starts nothing."""
    path = tmp_path / "typo.yaml"
    path.write_text(UNKNOWN_TOOL)
    proc = cli("validate", str(path))
    assert proc.returncode == 2, proc.stdout
    first, second = proc.stderr.strip().splitlines()
    assert first.startswith(f"{path}:8: state 'listing': run_tool names the unknown tool "
                            "'lst_files' (did you mean 'list_files'?)")
    assert second.startswith(f"{path}:13: state 'reading': run_tool names the unknown tool "
                             "'read_file'") and "add it to `tools:`" in second
    run = cli("run", str(path), "--workspace", str(tmp_path))
    assert run.returncode == 2
    assert run.stderr.startswith(f"error: {path}:8: state 'listing'"), run.stderr
    assert "Traceback" not in run.stderr and cli.json("runs") == []
    path.write_text(UNKNOWN_TOOL.replace("lst_files", "list_files")
                    .replace("[list_files]", "[list_files, read_file]"))
    assert cli("validate", str(path)).returncode == 0
    (tmp_path / "a.txt").write_text("hello\n")
    done = cli("run", str(path), "--workspace", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
