"""Static proof that a parsed machine can run: actions, params, triggers, templates, states and
reachability.

Every problem is reported (not only the first), each with the line it is about and a fix. A state
must handle every trigger its action can emit *with its params* (``run_tool`` with
``on_error: fail_run`` never emits ``failed``; ``call_model`` with ``tools: false`` never emits
``tool_calls``); a transition for a trigger the action can emit in general is never an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from engine.spec.bundled import child_machine_path
from engine.spec.load import did_you_mean, pydantic_message
from engine.spec.model import MachineSpec, StateSpec
from engine.spec.templates import check as check_template
from engine.vocabulary.errors import SpecProblem, UsageError

if TYPE_CHECKING:  # the action contract is only a type here: no import of the actions layer
    from engine.actions.base import ActionInfo


def check_machine(spec: MachineSpec, actions: Mapping[str, ActionInfo]) -> list[SpecProblem]:
    """Every problem in ``spec`` against the action registry ``actions``, sorted by line."""
    checker = _Checker(spec, actions)
    checker.initial()
    for state in spec.states.values():
        checker.state(state)
    checker.children()
    checker.graph()
    return sorted(checker.problems, key=lambda p: p.line or 0)


class _Checker:
    def __init__(self, spec: MachineSpec, actions: Mapping[str, ActionInfo]) -> None:
        self.spec = spec
        self.actions = actions
        self.problems: list[SpecProblem] = []

    def add(self, line: int | None, message: str) -> None:
        self.problems.append(SpecProblem(self.spec.path, line or None, message))

    def initial(self) -> None:
        initial, states = self.spec.initial, self.spec.states
        if not initial:
            self.add(None, f"no initial state: add `initial: <state>` (states: {_names(states)})")
        elif initial not in states:
            self.add(self.spec.key_lines.get("initial"),
                     f"initial state '{initial}' is not a state{did_you_mean(initial, states)}")

    def state(self, state: StateSpec) -> None:
        for trigger, dest in state.on.items():
            if dest not in self.spec.states:
                self.add(state.on_lines.get(trigger, state.line),
                         f"'{dest}' is not a state{did_you_mean(dest, self.spec.states)}")
        if state.final:
            self.final(state)
        elif state.action is None:
            self.add(state.line, f"state '{state.name}' has no action "
                                 "(add `action: NAME` or `final: true`)")
        elif state.action not in self.actions:
            self.add(state.line_of("action"),
                     f"state '{state.name}': unknown action '{state.action}'"
                     f"{did_you_mean(state.action, self.actions)}; "
                     f"known actions: {_names(sorted(self.actions))}")
        else:
            info = self.actions[state.action]
            if self.params(state, info):
                self.templates(state, info)
                if state.action == "run_machine":
                    self.child(str(state.params.get("machine")), state.line_of("with.machine"),
                               f"state '{state.name}': with.machine")
            self.triggers(state, info)

    def children(self) -> None:
        """Each machine ``children:`` lists (the ``delegate`` tool's) must exist."""
        for name in self.spec.children:
            self.child(name, self.spec.key_lines.get("children"), "children")

    def child(self, name: str, line: int | None, where: str) -> None:
        """A child machine must be a file (beside this one, or as given) or a bundled name."""
        try:
            found = child_machine_path(name, self.spec.path).exists()
        except UsageError as exc:
            self.add(line, f"{where}: {exc}")
            return
        if not found:
            self.add(line, f"{where}: no machine file {name!r} (beside "
                           f"{self.spec.path or 'this machine'}, or as given) and no bundled "
                           "machine of that name")

    def final(self, state: StateSpec) -> None:
        fixes = (("action", state.action is not None, "has no action"),
                 ("with", bool(state.params), "takes no params"),
                 ("on", bool(state.on), "has no transitions"))
        for key, present, rule in fixes:
            if present:
                self.add(state.line_of(key), f"state '{state.name}': a final state {rule} "
                                             f"(remove `{key}:` or `final: true`)")

    def params(self, state: StateSpec, info: ActionInfo) -> bool:
        try:
            info.params.model_validate(state.params)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                self.param_problem(state, info, error)
            return False
        return True

    def templates(self, state: StateSpec, info: ActionInfo) -> None:
        """Parse every template the action renders; each problem at its line in the file."""
        for key in info.templated:
            for path, text in _strings(state.params.get(key), f"with.{key}"):
                line = state.line_of(path)
                for issue in check_template(text, tuple(self.spec.states)):
                    # A multi-line template is a block scalar: its first line follows the key.
                    at = line + issue.line if "\n" in text.rstrip("\n") else line
                    self.add(at, f"state '{state.name}': {path}: {issue.message}")

    def emitted(self, state: StateSpec, info: ActionInfo) -> frozenset[str]:
        """What the action can emit with this state's params (all of ``emits`` if invalid)."""
        try:
            return info.emitted(info.params.model_validate(state.params))
        except ValidationError:
            return info.emits

    def param_problem(self, state: StateSpec, info: ActionInfo, error: Any) -> None:
        key = "with." + ".".join(str(p) for p in error["loc"]) if error["loc"] else "with"
        where = f"state '{state.name}': {key}: "
        if error["type"] == "extra_forbidden":
            valid = tuple(info.params.model_fields)
            name = str(error["loc"][-1])
            hint = did_you_mean(name, valid)
            takes = f"valid params: {', '.join(valid)}" if valid else "it takes no params"
            message = f"{where}unknown param for action '{info.name}'{hint}; {takes}"
        else:
            message = where + pydantic_message(error)
        self.add(state.line_of(key), message)

    def triggers(self, state: StateSpec, info: ActionInfo) -> None:
        for trigger in sorted(self.emitted(state, info) - state.on.keys()):
            self.add(state.line_of("on"),
                     f"state '{state.name}': action '{info.name}' can emit '{trigger}' but the "
                     f"state has no transition for it (add `on: {{{trigger}: <state>}}`)")
        for trigger in state.on:
            if trigger not in info.emits:
                self.add(state.on_lines.get(trigger, state.line),
                         f"state '{state.name}': action '{info.name}' never emits '{trigger}'"
                         f"{did_you_mean(trigger, info.emits)}; "
                         f"it emits: {_names(sorted(info.emits)) or 'nothing'}")

    def graph(self) -> None:
        spec = self.spec
        finals = spec.final_states
        if not finals:
            self.add(spec.key_lines.get("states"),
                     "no final state: add one, e.g. `done: {final: true}`")
        edges = [(src, dest) for src, _, dest in spec.transitions() if dest in spec.states]
        if spec.initial in spec.states:
            reached = _reach([spec.initial], edges)
            for name, state in spec.states.items():
                if name not in reached:
                    self.add(state.line, f"state '{name}' is unreachable from the initial state "
                                         f"'{spec.initial}' (add a transition to it or remove it)")
        if finals:
            # A state whose edges are still broken may end anywhere once fixed: no cascade.
            broken = [n for n, s in spec.states.items() if not s.final and self.incomplete(s)]
            reverse = [(dest, src) for src, dest in edges]
            ending = _reach([*finals, *broken], reverse)
            for name, state in spec.states.items():
                if name not in ending:
                    self.add(state.line, f"state '{name}' cannot reach a final state (add a "
                                         f"transition that leads to {_names(finals, ' or ')})")


    def incomplete(self, state: StateSpec) -> bool:
        """Whether ``state`` has an unknown destination or action, or a missing trigger."""
        info = self.actions.get(state.action or "")
        return (info is None or bool(self.emitted(state, info) - state.on.keys())
                or any(dest not in self.spec.states for dest in state.on.values()))


def _reach(start: Iterable[str], edges: list[tuple[str, str]]) -> set[str]:
    """States reachable from ``start`` along ``edges`` (including ``start``)."""
    nexts: dict[str, list[str]] = {}
    for src, dest in edges:
        nexts.setdefault(src, []).append(dest)
    seen = set(start)
    todo = list(seen)
    while todo:
        for dest in nexts.get(todo.pop(), ()):
            if dest not in seen:
                seen.add(dest)
                todo.append(dest)
    return seen


def _strings(value: Any, path: str) -> Iterable[tuple[str, str]]:
    """Every string inside ``value`` with its dotted key path (list items keep the list's)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v, path)


def _names(names: Iterable[str], sep: str = ", ") -> str:
    return sep.join(f"{n}" for n in names)



def fixed_tool_problems(spec: MachineSpec, offered: Iterable[str], *,
                        unsure: bool = False) -> list[SpecProblem]:
    """A ``run_tool`` state naming a tool the run will not offer, with its line: ``offered``
    are the tools' names (MCP tools, ``mcp__SERVER__TOOL``, are known only once their servers
    answer). ``unsure``: some offered tools' names are not known yet (imported later), so a
    name is then left to the run."""
    known = set(offered)
    problems: list[SpecProblem] = []
    for state in spec.states.values():
        tool = state.params.get("tool") if state.action == "run_tool" else None
        if not isinstance(tool, str) or tool in known or tool.startswith("mcp__") or unsure:
            continue
        problems.append(SpecProblem(
            spec.path, state.line_of("with.tool") or None,
            f"state '{state.name}': run_tool names the unknown tool '{tool}'"
            f"{did_you_mean(tool, known)}; the machine offers: {_names(sorted(known)) or 'none'}"
            f" (add it to `tools:`, or give it in code: tools=[...])"))
    return problems
