"""Machine specs: parsing with lines, refusing broken files with exact messages, static checks."""

from __future__ import annotations

import hashlib
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.actions.base import ActionInfo, NoParams
from engine.spec import (
    ContextSpec,
    Limits,
    MachineSpec,
    McpServerSpec,
    StateSpec,
    machine_hash,
    parse_machine,
)
from engine.spec.load import MAX_DEPTH, MAX_NODES
from engine.validation import check_machine, load_machine
from engine.vocabulary.errors import EXIT_BAD_INPUT, SpecError

HERE = Path(__file__).parent
BROKEN = sorted((HERE / "machines_broken").glob("*.yaml"))
VALID = sorted((HERE / "machines_valid").glob("*.yaml"))
EXPECT = re.compile(r"^# expect: (?:(\d+): )?(.*)$", re.MULTILINE)


class PlanParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ask_model: bool = False


class RunToolParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


async def _never(ctx: Any, params: Any) -> Any:
    raise AssertionError("spec tests never run actions")


def _action(name: str, emits: set[str], params: type[BaseModel] = NoParams) -> ActionInfo:
    return ActionInfo(name=name, emits=frozenset(emits), params=params, fn=_never)


ACTIONS = {a.name: a for a in (
    _action("plan", {"ready"}, PlanParams),
    _action("call_model", {"tool_calls", "final"}),
    _action("await_approval", {"decided", "all_denied"}),
    _action("exec_tool", {"done"}),
    _action("checkpoint", {"saved"}),
    _action("evaluate_stop", {"continue", "stop", "exhausted"}),
    _action("run_tool", {"ok", "failed"}, RunToolParams),
)}
"""A small stand-in for the registry's ACTIONS, with the same triggers and param shapes."""


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems_of(path: Path | str) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_machine(path, ACTIONS)
    assert info.value.exit_code == EXIT_BAD_INPUT
    assert str(info.value) == "\n".join(str(p) for p in info.value.problems)
    return [str(p) for p in info.value.problems]


def expected_of(path: Path) -> list[str]:
    found = EXPECT.findall(path.read_text(encoding="utf-8"))
    return [f"{path}:{line}: {msg}" if line else f"{path}: {msg}" for line, msg in found]


# --- broken machines: every problem, exact file:line and message --------------------------------

def test_there_are_enough_broken_fixtures() -> None:
    assert len(BROKEN) >= 20
    assert all(expected_of(p) for p in BROKEN), "every fixture states what it expects"


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_broken_machine_reports_exactly(path: Path) -> None:
    assert problems_of(path) == expected_of(path)


BROKEN_INLINE = [
    ("exec_tool typo from the design", """
        name: typo
        initial: call_model
        states:
          call_model:
            action: call_model
            on:
              tool_calls: exec_tol
              final: done
          exec_tool: {action: exec_tool, on: {done: call_model}}
          done: {final: true}
        """, [
        "7: 'exec_tol' is not a state (did you mean 'exec_tool'?)",
        "9: state 'exec_tool' is unreachable from the initial state 'call_model' "
        "(add a transition to it or remove it)",
    ]),
    ("duplicate top-level key", """
        name: a
        initial: plan
        name: b
        states:
          plan: {action: plan, on: {ready: done}}
          done: {final: true}
        """, ["3: duplicate key 'name' (first at line 1)"]),
    ("duplicate with key", """
        name: dup_with
        initial: run
        states:
          run:
            action: run_tool
            with:
              tool: run_shell
              tool: read_file
            on: {ok: done, failed: done}
          done: {final: true}
        """, ["8: duplicate key 'tool' (first at line 7)"]),
    ("tab indentation", "name: t\ninitial: plan\nstates:\n\tplan: {action: plan}\n",
     ["4: invalid YAML: found character that cannot start any token "
      "(while scanning for the next token at line 4); indent with spaces, not tabs"]),
    ("context section field and type", """
        name: ctx
        initial: plan
        context: {window: 1000, compress_at: high}
        states:
          plan: {action: plan, on: {ready: done}}
          done: {final: true}
        """, [
        "3: context: unknown field 'window' (did you mean 'window_tokens'?); "
        "valid fields: window_tokens, compress_at, keep_recent_turns",
        "3: context.compress_at: expected a number (got 'high')",
    ]),
    ("on is not a mapping", """
        name: on_list
        initial: plan
        states:
          plan: {action: plan, on: [ready, done]}
          done: {final: true}
        """, ["4: state 'plan': on: expected a mapping"]),
    ("destination is not a string", """
        name: dest_int
        initial: plan
        states:
          plan: {action: plan, on: {ready: 3}}
          done: {final: true}
        """, ["4: state 'plan': on.ready: expected a string (got 3)"]),
    ("plan param of the wrong type", """
        name: plan_param
        initial: plan
        states:
          plan:
            action: plan
            with: {ask_model: "sometimes"}
            on: {ready: done}
          done: {final: true}
        """, ["6: state 'plan': with.ask_model: input should be a valid boolean, unable to "
              "interpret input (got 'sometimes')"]),
    ("params for an action that takes none", """
        name: no_params
        initial: save
        states:
          save:
            action: checkpoint
            with: {every: 3}
            on: {saved: done}
          done: {final: true}
        """, ["6: state 'save': with.every: unknown param for action 'checkpoint'; "
              "it takes no params"]),
    ("final state with params", """
        name: final_params
        initial: plan
        states:
          plan: {action: plan, on: {ready: done}}
          done:
            final: true
            with: {note: bye}
        """, ["7: state 'done': a final state takes no params (remove `with:` or `final: true`)"]),
    ("anchor and alias inside a scalar list", """
        name: alias
        initial: run
        states:
          run:
            action: run_tool
            with: {tool: &t run_shell, args: {again: *t}}
            on: {ok: done, failed: done}
          done: {final: true}
        """, ["6: YAML alias '*t' is not allowed in machine files; write the value out"]),
    ("empty states", """
        name: empty
        initial: plan
        states: {}
        """, ["3: states: expected a mapping of state name -> {action: NAME, on: "
              "{TRIGGER: STATE}} or {final: true}"]),
    ("non-scalar key", """
        name: complex_key
        initial: plan
        states:
          ? [plan, again]
          : {action: plan}
          done: {final: true}
        """, ["4: keys must be plain names, not lists or mappings"]),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in BROKEN_INLINE],
                         ids=[c[0] for c in BROKEN_INLINE])
def test_broken_inline_machine(tmp_path: Path, text: str, expected: list[str]) -> None:
    path = write(tmp_path, text)
    assert problems_of(path) == [f"{path}:{e}" for e in expected]


def test_missing_file_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert problems_of("machines/x.yaml") == ["machines/x.yaml: no such file"]


def test_relative_path_is_kept_in_messages(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "machines").mkdir()
    write(tmp_path / "machines", "name: x\ninitial: plna\nstates:\n  plan: {final: true}\n")
    monkeypatch.chdir(tmp_path)
    assert problems_of(Path("machines/m.yaml")) == [
        "machines/m.yaml:2: initial state 'plna' is not a state (did you mean 'plan'?)"]


def test_directory_empty_file_and_bad_bytes(tmp_path: Path) -> None:
    assert problems_of(tmp_path) == [f"{tmp_path}: is a directory, not a machine file"]
    empty = write(tmp_path, "# nothing here\n")
    assert problems_of(empty) == [
        f"{empty}: the file is empty (a machine needs name, initial and states)"]
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: x\ninitial: plan\ndescription: caf\xe9\n")
    assert problems_of(latin) == [f"{latin}:3: not UTF-8 text (byte 0xe9)"]


def test_huge_alias_bomb_is_refused_without_expanding(tmp_path: Path) -> None:
    rows = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 30)]
    path = write(tmp_path, "name: bomb\n" + "\n".join(rows) + "\n")
    assert problems_of(path) == [
        f"{path}:3: YAML alias '*a0' is not allowed in machine files; write the value out"]


def test_too_many_nodes_is_refused(tmp_path: Path) -> None:
    head = "name: big\nstates:\n  s:\n    action: plan\n    with:\n      xs:\n"
    path = tmp_path / "big.yaml"
    path.write_text(head + "".join(f"        - {i}\n" for i in range(MAX_NODES)))
    # Values counted: root, 'big', states, s, 'plan', with, xs (7), then the items from line 7.
    assert problems_of(path) == [
        f"{path}:{MAX_NODES}: document too large (more than {MAX_NODES} YAML nodes)"]


def test_deep_nesting_is_refused_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("name: deep\nstates:\n  s: " + "[" * 900 + "]" * 900 + "\n")
    assert problems_of(path) == [
        f"{path}:3: document nested too deeply (more than {MAX_DEPTH} levels)"]


# --- valid machines ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_machines_load(path: Path) -> None:
    spec = load_machine(path, ACTIONS)
    assert check_machine(spec, ACTIONS) == []
    assert spec == parse_machine(path)


def test_parse_keeps_every_field_and_line() -> None:
    path = HERE / "machines_valid" / "coding_agent.yaml"
    spec = parse_machine(path)
    assert (spec.name, spec.kind, spec.initial, spec.model) == (
        "coding_agent", "agent", "plan", "scripted")
    assert spec.limits == Limits(max_steps=60, max_tokens=400000, max_cost_usd=2.0, timeout_s=1800)
    assert spec.context == ContextSpec(window_tokens=128000)
    assert spec.tools[:2] == ("read_file", "list_files") and len(spec.tools) == 7
    assert spec.mcp_servers["git"] == McpServerSpec(
        command="mcp-server-git", args=["--repository", "."], trust="internal")
    assert spec.mcp_servers["remote"].url == "http://127.0.0.1:8931/mcp"
    assert spec.mcp_servers["remote"].trust == "untrusted"
    assert spec.mcp_servers["remote"].timeout_s == 20.0
    assert spec.policy == "policy.yaml"
    assert spec.system_prompt == "You are a careful coding agent."
    assert list(spec.states) == ["plan", "call_model", "await_approval", "exec_tool",
                                 "checkpoint", "evaluate_stop", "done", "failed"]
    assert spec.final_states == ("done", "failed")
    assert spec.states["evaluate_stop"].line == 21
    assert spec.states["evaluate_stop"].on_lines == {"continue": 21, "stop": 21, "exhausted": 21}
    assert spec.key_lines["initial"] == 5
    assert spec.path == str(path)
    assert spec.source_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert machine_hash(spec) == spec.source_hash
    assert spec.transitions()[:3] == [("plan", "ready", "call_model"),
                                      ("call_model", "tool_calls", "await_approval"),
                                      ("call_model", "final", "evaluate_stop")]


def test_block_style_lines_and_params() -> None:
    spec = parse_machine(HERE / "machines_valid" / "test_fix.yaml")
    run = spec.states["run_tests"]
    assert run.params == {"tool": "run_shell", "args": {"command": "python -m pytest -q"}}
    assert run.description == "Run the project's tests."
    assert (run.line, run.line_of("action"), run.line_of("with.tool")) == (6, 8, 10)
    assert run.line_of("with.args.command") == 11
    assert run.line_of("nothing.here") == 6
    assert run.on_lines == {"ok": 13, "failed": 14}
    assert spec.kind == "workflow" and spec.limits == Limits() and spec.context is None


def test_yaml_11_booleans_stay_names_as_keys(tmp_path: Path) -> None:
    """``on``, ``yes`` and ``off`` are booleans to YAML 1.1; as keys they must stay names."""
    actions = {"ask": _action("ask", {"yes", "no", "off"})}
    path = write(tmp_path, """
        name: bools
        initial: ask
        states:
          ask: {action: ask, on: {yes: done, no: ask, off: done}}
          done: {final: true}
        """)
    spec = load_machine(path, actions)
    assert spec.states["ask"].on == {"yes": "done", "no": "ask", "off": "done"}


def test_spec_values_are_frozen() -> None:
    spec = parse_machine(HERE / "machines_valid" / "coding_agent.yaml")
    with pytest.raises(ValidationError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        spec.states["plan"].action = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        Limits(max_step=3)  # type: ignore[call-arg]


def test_check_on_a_spec_built_in_code() -> None:
    spec = MachineSpec(name="code", initial="a", path="<code>", states={
        "a": StateSpec(name="a", action="plan", on={"ready": "b"}),
        "b": StateSpec(name="b", action="checkpoint", on={"saved": "a"}),
    })
    assert [str(p) for p in check_machine(spec, ACTIONS)] == [
        "<code>: no final state: add one, e.g. `done: {final: true}`"]


def test_mcp_server_needs_exactly_one_transport() -> None:
    assert McpServerSpec(url="http://127.0.0.1:1/mcp").command is None
    with pytest.raises(ValidationError, match="exactly one of 'command'"):
        McpServerSpec()
