"""Shell command classification: parse with tree-sitter-bash, judge every simple command.

The whole grammar agents emit is walked: pipelines, lists (``;`` ``&&`` ``||`` ``&``, newlines),
subshells, groups, ``$(...)``, backticks, process substitution, redirections, here-docs,
functions, loops. Each simple command is unwrapped and judged by its program's rule
(``rules.analyze``); shell code it runs (``bash -c``, ``eval``, a here-doc fed to a shell) is
parsed and judged the same way. Paths are judged with ``paths.judge_literal``.

Fails closed: a syntax error, a node the walker does not know, a command name only known at run
time, ``$IFS`` or ``$'\\x..'`` tricks are at least ``ask``; piping into a shell is ``deny``.
The compound takes the highest risk and the strictest decision.

This module is the only one that imports ``tree_sitter``.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from engine.permissions.effect import Effect, is_dangerous_variable, program_name
from engine.permissions.expansion import echo_output, filter_output, printf_output
from engine.permissions.listings import listed_dirs
from engine.permissions.paths import Root
from engine.permissions.programs import COMMAND_VARS
from engine.permissions.rules import RULES, analyze, capability
from engine.permissions.shell_paths import (
    GLOB,
    NULL_DEVICES,
    STRICTNESS,
    DecisionValue,
    PathJudge,
    glob_matches,
    strictest,
)
from engine.permissions.words import (
    INPUT_CODE,
    INPUT_VAR,
    Word,
    code_of,
    expand_braces,
    printable,
)
from engine.tooling.spec import Risk, max_risk

logger = logging.getLogger(__name__)

DEFAULT_DECISION: dict[str, DecisionValue] = {
    "read": "allow", "exec": "ask", "write": "ask", "network": "ask", "install": "ask",
    "destructive": "deny",
}
"""What each risk class gets when nothing else is known."""
MAX_DEPTH = 4
"""Nesting of ``bash -c``/``eval`` beyond this is not followed (and not allowed)."""

_LANGUAGE = Language(tree_sitter_bash.language())
_PARSER = Parser(_LANGUAGE)

_LINE_CONTINUATION = re.compile(r"(?<!\\)((?:\\\\)*)\\\n")
_IFS = re.compile(r"\$\{?IFS\b")
_FUNCTION = re.compile(r"(?:\bfunction\s+([^\s(){};]+))"
                       r"|(?:(?<![^\s(){};|&])([^\s(){};|&]+)\s*\(\s*\))")
"""A name followed by ``()`` (anchored at a word start: linear time on long words)."""
_ASSIGNED = re.compile(r"(?<![\w$])([A-Za-z_]\w*)(?:\[[^\]]*\])?\+?=")
_LOOP_VAR = re.compile(r"\b(?:for|select)\s+([A-Za-z_]\w*)")
_UNSET = re.compile(r"\bunset\s+(?:-[fv]\s+)?([A-Za-z_]\w*)")
_TAINT_ALL = re.compile(r"\b(?:read|mapfile|readarray|getopts|source|eval|printf\s+-v)\b"
                        r"|(?:^|[;&|(\s])\.\s")
_UNPARSED_SUBST = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\()")
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
_READ_OPS = frozenset({"<"})
_KNOWN = frozenset({
    "program", "list", "compound_statement", "subshell", "do_group", "if_statement",
    "elif_clause", "else_clause", "while_statement", "for_statement", "c_style_for_statement",
    "case_statement", "case_item", "negated_command", "test_command", "declaration_command",
    "unset_command", "variable_assignments", "binary_expression", "unary_expression",
    "ternary_expression", "parenthesized_expression", "postfix_expression", "word", "number",
    "string", "string_content", "raw_string", "ansi_c_string", "translated_string",
    "concatenation", "simple_expansion", "expansion", "arithmetic_expansion", "variable_name",
    "special_variable_name", "subscript", "array", "brace_expression", "command_name",
    "heredoc_body", "heredoc_content", "heredoc_start", "heredoc_end", "file_descriptor",
    "test_operator", "extglob_pattern", "regex", "herestring_redirect", "heredoc_redirect",
})
"""Node types walked by visiting their children; any other named type is not understood."""


@dataclass(frozen=True, slots=True)
class ShellVerdict:
    """The judgement of one command string."""

    risk: Risk
    decision: DecisionValue
    reason: str
    commands: list[dict[str, Any]]
    """One entry per simple command (nested ones included): argv, risk, decision, reason,
    capability, floor (the least strict decision any rule may give it), via, wrappers."""
    parsed: bool
    """False when the parser reported an error or the walker met an unknown construct."""
    floor: DecisionValue = "allow"
    """The least strict decision any policy rule may give the whole command."""
    unnamed: bool = False
    """Some program the command runs cannot be named before it runs (``$(cat x) -rf dir``):
    never allowed by a policy, a mode or an "always" answer; ``deny`` under ``auto``."""

    def to_json(self) -> dict[str, Any]:
        """The object printed by ``engine policy check-shell --json``."""
        return {"decision": self.decision, "risk": self.risk, "reason": self.reason,
                "commands": self.commands}


def classify_command(command: str, workspace: Path, env: Mapping[str, str] | None = None, *,
                     roots: Sequence[Root] = ()) -> ShellVerdict:
    """Parse ``command`` and judge every simple command in it (never runs anything)."""
    walker = _Walker(Path(workspace), roots, os.environ if env is None else env)
    try:
        walker.run(command, "", 0)
    except (RecursionError, ValueError, OSError) as exc:  # fail closed, never crash
        logger.warning("shell command could not be judged: %s", exc)
        walker.problems.append(f"the command could not be judged ({type(exc).__name__})")
    return walker.verdict()


def check_shell_json(command: str, workspace: Path, env: Mapping[str, str] | None = None,
                     approval: str = "policy", tool: str = "") -> dict[str, Any]:
    """The JSON object printed by ``engine policy check-shell`` (any string, never raises on
    its content: strings are made printable). Under ``approval="auto"`` a command whose
    program cannot be named is ``deny`` (``ask`` would run it unseen). With ``tool`` (the
    shell tool's name), capabilities are given as the policy grants them: ``<tool>:<scope>``."""
    verdict = classify_command(command, workspace, env)
    out = verdict.to_json()
    if tool:
        for entry in out.get("commands") or ():
            entry["capability"] = f"{tool}:{entry.get('capability', '')}"
    if approval == "auto" and verdict.unnamed and out["decision"] == "ask":
        out["decision"] = "deny"
        out["reason"] = f"{out['reason']} (the program cannot be named before it runs)"
    shown: dict[str, Any] = printable(out)
    return shown


@dataclass(frozen=True, slots=True)
class _Ctx:
    src: bytes
    via: str = ""
    depth: int = 0
    piped: bool = False
    """Standard input comes from the previous command of a pipeline."""
    stdin: Word | None = None
    """Standard input is this here-doc or here-string."""
    truncate: bool = False
    """The redirections belong to a command that writes nothing: ``>`` empties the file."""
    listed: tuple[str, ...] = ()
    """Standard input is a listing of paths under these directories (``find . | xargs``)."""


@dataclass(slots=True)
class _Walker(PathJudge):
    ws: Path
    roots: Sequence[Root]
    env: Mapping[str, str]
    entries: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    floors: list[tuple[DecisionValue, str]] = field(default_factory=list)
    """Decisions the whole command cannot go below, with why (obfuscation)."""
    cwds: list[Path | None] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)
    """Names that look like functions anywhere in the command (defined before or after)."""
    defined: set[str] = field(default_factory=set)
    """Functions and aliases defined by the lines walked so far."""
    fork_bombs: set[str] = field(default_factory=set)
    """Functions whose body starts copies of themselves in a pipeline or the background."""
    tainted: set[str] = field(default_factory=set)
    taint_all: bool = False
    loops: dict[str, list[str]] = field(default_factory=dict)
    """Loop variables over a static list (``for f in src/*.py``): the words they take."""
    known: dict[str, list[str]] = field(default_factory=dict)
    """Values assigned to variables by the lines walked so far, when they decode statically."""
    unknown: set[str] = field(default_factory=set)
    """Variables assigned a value that does not decode statically."""
    unnamed: list[str] = field(default_factory=list)
    """Why some program cannot be named before the command runs."""

    # ------------------------------------------------------------ entry points

    def run(self, text: str, via: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.problems.append(f"shell code nested more than {MAX_DEPTH} levels deep")
            return
        if not self.cwds:
            self.cwds.append(self.ws)
        text = _LINE_CONTINUATION.sub(r"\1", text)
        self._prescan(text)
        src = text.encode("utf-8", "surrogateescape")
        root = _PARSER.parse(src).root_node
        if root.has_error:
            where = f" ({via})" if via else ""
            self.problems.append(f"the command does not parse as shell syntax{where}")
        self._visit(root, _Ctx(src, via, depth))

    def verdict(self) -> ShellVerdict:
        entries = self.entries
        risk: Risk = max_risk(*(e["risk"] for e in entries))
        decision = strictest(*(e["decision"] for e in entries))
        floor = strictest(*(d for d, _ in self.floors),
                          "ask" if self.problems or self.unnamed else "allow")
        reason = self._reason(decision)
        if self.problems:
            risk = max_risk(risk, "exec")
            if STRICTNESS[decision] < STRICTNESS["ask"]:
                reason = self.problems[0]
            decision = strictest(decision, "ask")
        if STRICTNESS[floor] > STRICTNESS[decision]:
            decision = floor
            reason = next((r for d, r in self.floors if d == floor), reason)
        return ShellVerdict(risk, decision, reason, entries, not self.problems, floor,
                            bool(self.unnamed))

    def _reason(self, decision: DecisionValue) -> str:
        if not self.entries:
            return "nothing to run"
        ranked = sorted(self.entries, key=lambda e: (
            -STRICTNESS[e["decision"]], -_RISKS.index(e["risk"])))
        top = ranked[0]
        if decision == "allow":
            return "reads only inside the workspace"
        return f"{shlex.join(top['argv'])}: {top['reason']}"

    def _prescan(self, text: str) -> None:
        """Names assigned anywhere, and functions defined anywhere, in the command."""
        self.tainted.update(_ASSIGNED.findall(text))
        self.tainted.update(_LOOP_VAR.findall(text))
        self.tainted.update(_UNSET.findall(text))
        if re.search(r"\b(?:cd|pushd|popd)\b", text):
            self.tainted.update({"PWD", "OLDPWD"})
        if _TAINT_ALL.search(text):
            self.taint_all = True
        for m in _FUNCTION.finditer(text):
            self.functions.add(m.group(1) or m.group(2))
        if _IFS.search(text):
            self.floors.append(("ask", "uses $IFS, a way to hide word boundaries"))

    # ------------------------------------------------------------ syntax walk

    def _visit(self, node: Node, ctx: _Ctx) -> None:
        if node.is_missing:
            self.problems.append(f"incomplete command: missing {node.type!r}")
            return
        if not node.is_named:
            return
        t = node.type
        handler = _HANDLERS.get(t)
        if handler is not None:
            handler(self, node, ctx)
            return
        if t == "ERROR":
            self.problems.append("the command does not parse as shell syntax")
            self._unparsed(node, ctx)
        elif t not in _KNOWN:
            self.problems.append(f"shell construct {t!r} is not understood")
        elif t in _LEAF_TEXT and _UNPARSED_SUBST.search(_text(node, ctx)):
            self.problems.append("a command substitution the parser did not recognise")
        elif t == "declaration_command" and any(
                c.type == "word" and re.fullmatch(r"-\w*n\w*", _text(c, ctx))
                for c in node.named_children):
            self.floors.append(("ask", "a name reference (declare -n) hides which variable is set"))
        elif t == "expansion" and any(c.type == "@" for c in node.children):
            self.floors.append(("ask", "${...@...} expansion can run code stored in a variable"))
        for child in node.named_children:
            self._visit(child, ctx)

    def _unparsed(self, node: Node, ctx: _Ctx) -> None:
        """Judge what the shell would still run from text the parser refused: ``{rm,-rf,x}``
        is brace-expanded into ``rm -rf x`` by bash, but is a syntax error to the grammar."""
        try:
            words = shlex.split(_text(node, ctx), comments=True)
        except ValueError:
            return
        if not words or "{" not in words[0]:
            return
        argv = [Word.of(x) for w in words for x in expand_braces(w)]
        self._simple(argv, ctx, floor_reasons=["a command the parser cannot read"])

    def _for(self, node: Node, ctx: _Ctx) -> None:
        """``for f in a b src/*.py``: ``$f`` is one of the listed words, each judged."""
        var = node.child_by_field_name("variable")
        values = node.children_by_field_name("value")
        if var is not None and values:
            words: list[str] | None = []
            for v in values:
                found = self._static(v, ctx)
                if found is None or words is None:
                    words = None
                    break
                words.extend(found)
            name = _text(var, ctx)
            if words is not None and words and all(
                    not any(c in w for c in "{},") for w in words):
                self.loops[name] = words[:64]
            else:
                self.unknown.add(name)
        self._children(node, ctx)

    def _group(self, node: Node, ctx: _Ctx) -> None:
        """``{ cmd; }`` is a group; ``{}`` or ``{x}`` is a word bash runs as a program, which
        the grammar reads as an (empty) group."""
        text = _text(node, ctx)
        if text.startswith("{") and text[1:2] not in (" ", "\t", "\n"):
            self.problems.append("a word starting with '{' read as a group")
            self._simple([Word.of(text.split()[0] if text.split() else text)], ctx)
        self._children(node, ctx)

    def _children(self, node: Node, ctx: _Ctx) -> None:
        for child in node.named_children:
            self._visit(child, ctx)

    def _comment(self, node: Node, ctx: _Ctx) -> None:
        return None

    def _substitution(self, node: Node, ctx: _Ctx) -> None:
        self._children(node, replace(ctx, piped=False, stdin=None))

    def _pipeline(self, node: Node, ctx: _Ctx) -> None:
        stages = [c for c in node.named_children if c.type != "comment"]
        printed: str | None = None
        for i, child in enumerate(stages):
            listed = self._listing(stages[i - 1], ctx) if i > 0 else ()
            printed = self._printed(stages[i - 1], ctx, printed) if i > 0 else None
            self._visit(child, replace(ctx, piped=i > 0 or ctx.piped, listed=listed,
                                       stdin=None if printed is None else Word.of(printed)))

    def _listing(self, node: Node, ctx: _Ctx) -> tuple[str, ...]:
        """The directories a pipeline stage lists paths under (``git ls-files``), or ()."""
        if node.type != "command" or any(c.type.endswith("redirect")
                                         for c in node.named_children):
            return ()
        name = node.child_by_field_name("name")
        if name is None:
            return ()
        argv = [self._word(name, ctx)] + [self._word(a, ctx)
                                          for a in node.children_by_field_name("argument")]
        return tuple(listed_dirs(argv) or ())

    def _function(self, node: Node, ctx: _Ctx) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None:
            fname = _text(name, ctx)
            self.functions.add(fname)
            self.defined.add(fname)
            if body is not None and _starts_copies(body, fname, ctx):
                self.fork_bombs.add(fname)
        if body is not None:
            self._visit(body, replace(ctx, piped=False, stdin=None))

    def _redirected(self, node: Node, ctx: _Ctx) -> None:
        stdin = ctx.stdin
        for child in node.children_by_field_name("redirect"):
            stdin = self._stdin_of(child, ctx) or stdin
        body = node.child_by_field_name("body")
        silent = body is None or self._writes_nothing(body, ctx)
        for child in node.named_children:
            if body is not None and child.id == body.id:
                self._visit(child, replace(ctx, stdin=stdin))
            else:
                self._visit(child, replace(ctx, truncate=silent))

    def _writes_nothing(self, body: Node, ctx: _Ctx) -> bool:
        """``:``, ``true``, ``cat /dev/null``, ``echo -n``: a ``>`` after them empties a file."""
        if body.type != "command":
            return False
        name = body.child_by_field_name("name")
        args = [self._word(a, ctx).value for a in body.children_by_field_name("argument")]
        prog = self._word(name, ctx).value if name is not None else None
        if prog in (":", "true", "false"):
            return True
        if prog == "cat":
            return bool(args) and all(a == "/dev/null" for a in args)
        return (prog == "echo" and args == ["-n"]) or (prog == "printf" and args == [""])

    def _stdin_of(self, node: Node, ctx: _Ctx) -> Word | None:
        if node.type == "heredoc_redirect":
            start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            text = _text(body, ctx) if body is not None else ""
            quoted = start is not None and _text(start, ctx)[:1] in ("'", '"', "\\")
            if not quoted and body is not None and body.named_children:
                self.floors.append(("ask", "a here-doc fed to a program has expansions"))
                subst = _has_type(body, ("command_substitution", "process_substitution"))
                return Word(None, text, "subst" if subst else "var")
            return Word.of(text)
        if node.type == "herestring_redirect":
            word = next(iter(node.named_children), None)
            return self._word(word, ctx) if word is not None else None
        if node.type == "file_redirect":
            dest = node.child_by_field_name("destination")
            op = next((_text(c, ctx) for c in node.children if not c.is_named), "")
            if op == "<" and dest is not None and dest.type == "process_substitution":
                return Word(None, _text(dest, ctx), "subst")
            if op == "<" and dest is not None:
                return Word(None, _text(dest, ctx), "other")  # a file: not shown
        return None

    def _assignment(self, node: Node, ctx: _Ctx) -> None:
        name = node.child_by_field_name("name")
        var = _text(name, ctx).split("[")[0] if name is not None else ""
        if is_dangerous_variable(var):
            self._entry([Word.of(_text(node, ctx))], "exec", "ask",
                        [f"setting {var} changes what programs run"], "", ctx)
        self._remember(var, node, ctx)
        self._stored_code(node, ctx)
        self._command_variable(node, ctx)
        self._children(node, replace(ctx, piped=False, stdin=None))

    def _command_variable(self, node: Node, ctx: _Ctx) -> None:
        """``GIT_SSH_COMMAND='...'``, ``EDITOR=...``: a value some program runs as a command."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        var = _text(name, ctx) if name is not None else ""
        if var in COMMAND_VARS and value is not None:
            self._script(f"{var}=", self._word(value, ctx), ctx)

    def _remember(self, var: str, node: Node, ctx: _Ctx) -> None:
        """``a=rm; $a -rf x``: keep what the variable holds for a later command position."""
        value = node.child_by_field_name("value")
        append = any(c.type == "+=" for c in node.children)
        cands = self._static(value, ctx) if value is not None else [""]
        if cands is None or append or "[" in _text(node, ctx).split("=", 1)[0]:
            self.unknown.add(var)
            return
        self.known[var] = list(dict.fromkeys([*self.known.get(var, []), *cands]))[:16]

    def _stored_code(self, node: Node, ctx: _Ctx) -> None:
        """``x='$(cmd)'`` stores code that ``${x@P}``, ``$((x))`` or ``eval`` can run later."""
        value = node.child_by_field_name("value")
        if value is not None and value.type in ("raw_string", "string", "ansi_c_string",
                                                 "concatenation"):
            w = self._word(value, ctx)
            if w.value is not None and ("$(" in w.value or "`" in w.value):
                self.floors.append(("ask", "stores shell code in a variable"))

    def _file_redirect(self, node: Node, ctx: _Ctx) -> None:
        op = next((_text(c, ctx) for c in node.children if not c.is_named), "")
        dest = node.child_by_field_name("destination")
        for child in node.named_children:
            self._visit(child, replace(ctx, piped=False, stdin=None))
        if dest is None or dest.type == "process_substitution":
            return
        word = self._word(dest, ctx)
        if (op == ">&" and (word.value or "").isdigit()) or word.value == "-":
            return
        if op in _WRITE_OPS:
            self._redirect_entry(op, word, True, ctx)
            if ctx.truncate and op in (">", ">|", "&>") and word.value not in NULL_DEVICES:
                self._entry([Word.of(op), word], "destructive", "deny",
                            [f"empties {word.shown}: the command before > writes nothing"],
                            "deny", ctx)
        elif op in _READ_OPS:
            self._redirect_entry(op, word, False, ctx)

    def _redirect_entry(self, op: str, word: Word, for_write: bool, ctx: _Ctx) -> None:
        if word.value in NULL_DEVICES:
            return
        decision, reasons = self._judge_paths([word], for_write)
        risk: Risk = "write" if for_write else "read"
        if for_write:
            decision = strictest(decision, "ask")
            reasons = reasons or [f"redirection writes {word.shown}"]
        self._entry([Word.of(op), word], risk, decision, reasons,
                    "deny" if decision == "deny" else "", ctx)

    # ------------------------------------------------------------ simple commands

    def _command(self, node: Node, ctx: _Ctx) -> None:
        name_node = node.child_by_field_name("name")
        arg_nodes = node.children_by_field_name("argument")
        stdin = ctx.stdin
        assigned: list[str] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                var = child.child_by_field_name("name")
                assigned.append(_text(var, ctx) if var is not None else "")
                self._stored_code(child, ctx)
                self._command_variable(child, ctx)
                self._children(child, replace(ctx, piped=False, stdin=None))
            elif child.type in ("herestring_redirect", "heredoc_redirect", "file_redirect"):
                stdin = self._stdin_of(child, ctx) or stdin
                self._visit(child, ctx)
            else:
                self._visit(child, replace(ctx, piped=False, stdin=None))
        if name_node is None:
            return
        argv = [self._word(name_node, ctx)] + [self._word(a, ctx) for a in arg_nodes]
        names = self._names(name_node, argv[0], ctx)
        if names is None:
            self.unnamed.append(f"the program {argv[0].text} is only known at run time")
            names = ([[argv[0]]], [])
        alternatives, floor_reasons = names
        for words in alternatives:
            self._simple([*words, *argv[1:]], replace(ctx, stdin=stdin), assigned,
                         floor_reasons)

    # ------------------------------------------------------------ command position

    def _names(self, node: Node, word: Word, ctx: _Ctx
               ) -> tuple[list[list[Word]], list[str]] | None:
        """What the command word can stand for: alternatives, each one or more words.

        Decodes what is static (quotes, ``$'..'``, braces, ``${IFS}``, globs, variables
        assigned earlier in the command, ``$(echo ..)``); None when the program cannot be named.
        """
        text = _text(node, ctx)
        reasons = []
        if "$'" in text and "\\" in text:
            reasons.append("command name hidden in a $'...' escape")
        subst = _has_type(node, ("command_substitution", "simple_expansion", "expansion"))
        if word.value is not None and not word.expandable and not _IFS.search(text) \
                and not subst:
            return [[word]], reasons
        if word.value is not None and word.expandable and not subst:
            return self._expanded_name(word), ["the command name is expanded by the shell"]
        cands = self._static(node, ctx)
        if cands is None:
            return None
        if _has_type(node, ("command_substitution",)) or _IFS.search(text):
            reasons.append("the command name is computed by the shell")
        alternatives = [[Word(w, text) for w in c.split()] for c in cands]
        return [a for a in alternatives if a] or [[Word("", text)]], reasons

    def _expanded_name(self, word: Word) -> list[list[Word]]:
        value = word.value or ""
        items = expand_braces(value)
        if len(items) > 1:
            return [[Word(i, word.text) for i in items]]
        if not GLOB.search(value):
            return [[word]]
        base = str(self.cwds[-1] or self.ws)
        matches = sorted(glob_matches(value, None if value.startswith("/") else base))
        return [[Word(m, word.text)] for m in matches[:32]] or [[word]]

    def _static(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """Every string ``node`` can expand to when that is known without running anything."""
        t = node.type
        if t == "command_name":
            child = next(iter(node.named_children), None)
            return self._static(child, ctx) if child is not None else [""]
        if t in ("word", "raw_string", "ansi_c_string", "string_content", "number"):
            w = self._word(node, ctx)
            return None if w.value is None else [w.value]
        if t in ("string", "concatenation", "translated_string"):
            return self._static_parts(node, ctx)
        if t == "simple_expansion" or (t == "expansion" and _simple_braced(node)):
            var = next((c for c in node.named_children
                        if c.type in ("variable_name", "special_variable_name")), None)
            return None if var is None else self._static_variable(_text(var, ctx))
        if t == "command_substitution":
            return self._static_output(node, ctx)
        if t == "expansion":
            return self._static_default(_text(node, ctx))
        return None

    def _static_default(self, text: str) -> list[str] | None:
        """``${X:-rm}``, ``${X-rm}``, ``${X:+rm}``: the value or the alternative word."""
        m = re.fullmatch(r"\$\{([A-Za-z_]\w*)(:?[-=+])([^$`'\"\\{}]*)\}", text)
        if m is None:
            return None
        value = self._static_variable(m.group(1))
        alt = m.group(3)
        if m.group(2).endswith("+"):
            return None if value is None else [alt if any(value) else ""]
        if value is None:
            unset = m.group(1) not in self.env and m.group(1) not in self.tainted and \
                m.group(1) not in self.known and not self.taint_all
            return [alt] if unset else None
        return [v if v or m.group(2)[0] != ":" else alt for v in value]

    def _static_parts(self, node: Node, ctx: _Ctx) -> list[str] | None:
        out = [""]
        pos = node.start_byte
        quoted = node.type != "concatenation"
        for child in node.children:
            gap = ctx.src[pos:child.start_byte].decode("utf-8", "surrogateescape")
            pos = child.end_byte
            if not child.is_named:
                parts = [gap] if quoted else [gap + _text(child, ctx)]
            else:
                found = self._static(child, ctx)
                if found is None:
                    return None
                parts = [gap + f for f in found]
            out = [a + b for a in out for b in parts][:16]
        tail = ctx.src[pos:node.end_byte].decode("utf-8", "surrogateescape")
        return [o + tail for o in out]

    def _static_variable(self, name: str) -> list[str] | None:
        if name == "IFS" and name not in self.known and name not in self.unknown:
            return [" "]
        if self.taint_all or name in self.unknown or name == INPUT_VAR:
            return None
        if name in self.known:
            return self.known[name]
        if name in self.loops:
            return self.loops[name]
        if name in self.tainted:
            return None
        value = self.env.get(name)
        return None if value is None else [value]

    def _static_output(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """``$(echo rm)``, ``$(printf '\\x72m')``: the output of a static echo or printf."""
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) != 1:
            return None
        out = self._printed(inner[0], ctx)
        return None if out is None else [out.rstrip("\n")]

    def _printed(self, cmd: Node, ctx: _Ctx, stdin: str | None = None) -> str | None:
        """What a static command prints: ``echo``/``printf``, or a decoder or filter
        (``base64 -d``, ``rev``, ``tr``, ``xxd -r -p``) over known input; None otherwise."""
        if cmd.type == "pipeline":
            for stage in (c for c in cmd.named_children if c.type != "comment"):
                stdin = self._printed(stage, ctx, stdin)
                if stdin is None:
                    return None
            return stdin
        if cmd.type != "command":
            return None
        name = cmd.child_by_field_name("name")
        for c in cmd.named_children:
            if c.type == "herestring_redirect" and c.named_children:
                found = self._static(c.named_children[0], ctx)
                if found is None or len(found) != 1:
                    return None
                stdin = found[0] + "\n"
            elif c.type.endswith("redirect") or c.type == "variable_assignment":
                return None
        if name is None:
            return None
        words = [self._static(n, ctx) for n in [name, *cmd.children_by_field_name("argument")]]
        if any(w is None or len(w) != 1 for w in words):
            return None
        argv = [w[0] for w in words if w is not None]
        if argv[0] == "echo":
            out = echo_output(argv[1:])
            return None if out is None else out + "\n"
        if argv[0] == "printf":
            return printf_output(argv[1:])
        return None if stdin is None else filter_output(argv, stdin)

    def _simple(self, argv: list[Word], ctx: _Ctx, assigned: Sequence[str] = (),
                floor_reasons: Sequence[str] = ()) -> None:
        e = analyze(argv)
        if e.argv and (e.argv[0].text == LISTED or (
                not program_name(e.argv[0]) and e.argv[0].value is None)):
            self.unnamed.append(f"the program {e.argv[0].text} is only known at run time")
            if ctx.piped:
                e.at_least("deny", "pipes data into a program the preview cannot name (it "
                                   "may be a shell)")
        for var in assigned:
            if is_dangerous_variable(var):
                e.add("exec", f"setting {var} changes what programs run")
        for reason in floor_reasons:
            e.at_least("ask", reason)
        self._defined_names(e)
        self._stdin(e, ctx)
        if self._covers_workspace(e.trees):
            e.add("destructive", f"{e.argv[0].shown} changes the whole workspace recursively")
        decision, path_reasons = self._judge_effect(e)
        decision = strictest(decision, DEFAULT_DECISION[e.risk], e.floor)
        reasons = [*e.reasons, *path_reasons]
        floor = "deny" if decision == "deny" else e.floor
        self._entry(e.argv or argv, e.risk, decision, reasons, floor, ctx, e.wrappers)
        for how, code in e.scripts:
            self._script(how, code, ctx)
        for how, nested in e.nested:
            if how == "xargs" and ctx.listed:
                nested = [_fed(w, ctx.listed) for w in nested]
            self._simple(nested, replace(ctx, via=how, piped=False, stdin=None, listed=()))

    def _defined_names(self, e: Effect) -> None:
        """Calls of functions and aliases this command defines, and aliases it defines."""
        name = program_name(e.argv[0]) if e.argv else ""
        if name in self.fork_bombs:
            e.add("destructive", f"{name} is a fork bomb: it starts copies of itself forever")
        if name in self.defined:
            e.add("exec", "")
            e.at_least("deny", f"{name} was defined earlier in this command: the call runs "
                               "code planted under another name")
        elif name in self.functions:
            e.add("exec", f"{e.argv[0].shown} is a function defined in this command")
        for alias, _ in e.defines:
            self.defined.add(alias)
            if alias in RULES or alias in self.functions:
                e.at_least("deny", f"alias {alias} replaces a command for later lines")

    def _stdin(self, e: Effect, ctx: _Ctx) -> None:
        """Code a shell or interpreter reads on standard input: shown, or refused."""
        unknown = ctx.stdin is not None and ctx.stdin.value is None
        fed_code = e.stdin_code == "interpreter" and ctx.stdin is not None
        if e.stdin_code and (ctx.piped or unknown or fed_code):
            e.add("exec", f"{e.argv[0].shown} runs the code it reads on its input")
            e.at_least("deny", "feeds a shell or interpreter code the preview cannot show "
                               "(a pipe, a download, a decoder or an expansion)")
        elif e.stdin_code == "shell" and ctx.stdin is not None:
            e.scripts.append((f"{e.argv[0].shown} <<", ctx.stdin))  # judged like bash -c
        elif e.stdin_code:
            e.add("exec", f"{e.argv[0].shown} runs the commands it reads from its input")
        elif e.stdin_reader is not None and ctx.stdin is not None:
            e.stdin_reader(e, ctx.stdin)
        elif e.stdin_reader is not None and ctx.piped:
            e.at_least("ask", f"{e.argv[0].shown} runs what it reads from a pipe")

    def _script(self, how: str, code: Word, ctx: _Ctx) -> None:
        text = code_of(code) if code.text != LISTED else None
        if text is not None:
            self.run(text, how, ctx.depth + 1)
        elif code.dynamic == "subst":
            self._entry([Word.of(how), code], "exec", "deny",
                        [f"{how} runs the output of a command as shell code"], "deny", ctx)
        else:
            self.unnamed.append(f"{how} runs shell code only known at run time")
            self._entry([Word.of(how), code], "exec", "ask",
                        [f"{how} runs shell code only known at run time"], "ask", ctx)

    def _entry(self, argv: list[Word], risk: Risk, decision: DecisionValue, reasons: list[str],
               floor: str, ctx: _Ctx, wrappers: Sequence[str] = ()) -> None:
        entry: dict[str, Any] = {
            "argv": [w.shown for w in argv], "risk": risk, "decision": decision,
            "reason": "; ".join(reasons) or _DEFAULT_REASON[risk],
            "capability": capability(argv), "floor": floor or "allow",
        }
        if ctx.via:
            entry["via"] = ctx.via
        if wrappers:
            entry["wrappers"] = list(wrappers)
        self.entries.append(entry)

    # ------------------------------------------------------------ words

    def _word(self, node: Node, ctx: _Ctx, at_start: bool = True) -> Word:
        t = node.type
        text = _text(node, ctx)
        if t == "command_name":
            child = next(iter(node.named_children), None)
            return self._word(child, ctx) if child is not None else Word.of(text)
        if t == "word":
            return self._plain_word(text, at_start)
        if t == "number":
            return Word.of(text)
        if t == "raw_string":
            return Word(text[1:-1], text)
        if t == "ansi_c_string":
            return _ansi_c(text)
        if t == "string_content":
            return Word(re.sub(r'\\([$`"\\\n])', r"\1", text), text)
        if t in ("string", "concatenation", "translated_string"):
            return self._splice(node, ctx)
        if t == "simple_expansion" or (t == "expansion" and _simple_braced(node)):
            var = next((c for c in node.named_children
                        if c.type in ("variable_name", "special_variable_name")), None)
            return self._variable(_text(var, ctx) if var is not None else "", text,
                                  var is not None and var.type == "special_variable_name")
        if t == "command_substitution":
            inner = [c for c in node.named_children if c.type != "comment"]
            dirs = self._listing(inner[0], ctx) if len(inner) == 1 else ()
            return _paths_under(dirs) if dirs else Word(None, text, "subst")
        if t == "process_substitution":
            return Word(None, text, "subst")
        return Word(None, text, "other")

    def _plain_word(self, text: str, at_start: bool) -> Word:
        expandable = bool(GLOB.search(text)) or ("{" in text and ("," in text or ".." in text))
        value = re.sub(r"\\(.)", r"\1", text, flags=re.S)
        if at_start and text.startswith("~") and (len(text) == 1 or text[1] == "/"):
            home = self._variable("HOME", text, False)
            if home.value is None:
                return replace(home, text=text)
            value = home.value + value[1:]
        elif at_start and text.startswith(("~+", "~-")) and (len(text) == 2 or text[2] == "/"):
            return self._tilde_dir(text, value)
        elif at_start and text.startswith("~"):
            return Word(None, text, "other")
        return Word(value, text, "", False, expandable)

    def _tilde_dir(self, text: str, value: str) -> Word:
        """``~+`` is the current directory (``$PWD``), ``~-`` the previous one (``$OLDPWD``)."""
        dirs = self.cwds
        known = dirs[-1] if text[1] == "+" else (dirs[-2] if len(dirs) > 1 else None)
        if known is None:
            return Word(None, text, "var")
        return Word(str(known) + value[2:], text)

    def _splice(self, node: Node, ctx: _Ctx) -> Word:
        src = ctx.src
        out: list[str] = []
        pos = node.start_byte
        dynamic = ""
        unset = expandable = listed = False
        quoted = node.type != "concatenation"
        for i, child in enumerate(node.children):
            out.append(src[pos:child.start_byte].decode("utf-8", "surrogateescape"))
            pos = child.end_byte
            if not child.is_named:
                if not quoted:
                    out.append(_text(child, ctx))
                continue
            w = self._word(child, ctx, at_start=i == 0 and not quoted)
            listed = listed or w.text == LISTED
            if w.value is None:
                dynamic = dynamic or w.dynamic or "other"
                unset = unset or w.unset
            else:
                out.append(w.value)
            expandable = expandable or (w.expandable and (
                not quoted or child.type in ("simple_expansion", "expansion")))
        out.append(src[pos:node.end_byte].decode("utf-8", "surrogateescape"))
        text = _text(node, ctx)
        value = "".join(out)
        if dynamic:
            return Word(None, text, dynamic, unset)  # type: ignore[arg-type]
        if not quoted and "{" in value and ("," in value or ".." in value):
            expandable = True
        return Word(value, LISTED if listed else text, "", False, expandable)

    def _variable(self, name: str, text: str, special: bool) -> Word:
        if special or name.isdigit() or name == INPUT_VAR:
            return Word(None, text, "var")
        if name in self.loops and name not in self.unknown and name not in self.known \
                and not self.taint_all:
            values = self.loops[name]
            joined = values[0] if len(values) == 1 else "{" + ",".join(values) + "}"
            return Word(joined, text, "", False, True)
        if self.taint_all or name in self.tainted:
            return Word(None, text, "var")
        value = self.env.get(name)
        if value is None:
            return Word(None, text, "var", unset=True)
        return Word(value, text)


_RISKS: tuple[str, ...] = ("read", "exec", "write", "network", "install", "destructive")
_DEFAULT_REASON: dict[str, str] = {
    "read": "reads only", "exec": "runs a program", "write": "writes files",
    "network": "uses the network", "install": "installs software",
    "destructive": "can destroy data",
}
_LEAF_TEXT = frozenset({"word", "string_content", "heredoc_content", "extglob_pattern", "regex"})
"""Text nodes in which a backtick or ``$(`` means the parser missed a substitution."""
_HANDLERS = {
    "command": _Walker._command,
    "pipeline": _Walker._pipeline,
    "redirected_statement": _Walker._redirected,
    "file_redirect": _Walker._file_redirect,
    "variable_assignment": _Walker._assignment,
    "function_definition": _Walker._function,
    "command_substitution": _Walker._substitution,
    "process_substitution": _Walker._substitution,
    "comment": _Walker._comment,
    "compound_statement": _Walker._group,
    "for_statement": _Walker._for,
}


LISTED = "<a path from a listing>"
"""The text of a word read from a listing: a path as an argument, unknown as code or program
(a file name can be any text)."""


def _paths_under(dirs: Sequence[str]) -> Word:
    """Any path a listing of ``dirs`` prints: each ``DIR/found`` is judged."""
    paths = [f"{d.rstrip('/') or '.'}/found" for d in dirs]
    value = paths[0] if len(paths) == 1 else "{" + ",".join(paths) + "}"
    return Word(value, LISTED, "", False, len(paths) > 1)


def _fed(w: Word, dirs: Sequence[str]) -> Word:
    """An ``xargs`` argument that is one path read from a listing of ``dirs``. Input pasted
    into a longer word (shell code for ``sh -c``) stays unknown: a file name can be code."""
    if w.value is None and w.text in ("<arguments from input>", INPUT_CODE):
        return _paths_under(dirs)
    return w


def _has_type(node: Node, types: tuple[str, ...]) -> bool:
    if node.type in types:
        return True
    return any(_has_type(c, types) for c in node.named_children)


def _starts_copies(body: Node, name: str, ctx: _Ctx) -> bool:
    """A function body that runs itself in a pipeline or in the background (``:|:&``)."""
    def calls(node: Node) -> bool:
        if node.type == "command":
            n = node.child_by_field_name("name")
            if n is not None and _text(n, ctx) == name:
                return True
        return any(calls(c) for c in node.named_children)

    def spawns(node: Node) -> bool:
        if node.type == "pipeline" and calls(node):
            return True
        if node.type in ("list", "compound_statement") and any(
                c.type == "&" for c in node.children) and calls(node):
            return True
        return any(spawns(c) for c in node.named_children)

    return spawns(body)


def _text(node: Node, ctx: _Ctx) -> str:
    return ctx.src[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")


def _simple_braced(node: Node) -> bool:
    """``${NAME}`` with no operator (``${NAME:-x}`` and ``${#NAME}`` are not plain values)."""
    kinds = [c.type for c in node.children]
    return kinds in (["${", "variable_name", "}"], ["${", "special_variable_name", "}"])


def _ansi_c(text: str) -> Word:
    inner = text[2:-1]
    try:
        prepared = (inner.replace("\\e", "\\x1b").replace("\\E", "\\x1b")
                    .replace("\\'", "'").replace('\\"', '"'))
        value = codecs.decode(prepared.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return Word(None, text, "other")
    return Word(value, text)
