"""Inline interpreter code (``python -c``, ``perl -e``, ``node -e``...): what it runs, deletes,
reads and replaces.

Interpreter code stays ``exec`` (asked); what can be read off it statically makes it stricter:
a shell-out call with literal arguments (``os.system("...")``, ``execSync("...")``, backticks,
``%x()``, ``qx{}``, Tcl ``exec``/``spawn``) is judged like ``bash -c``; a call that deletes
files (``shutil.rmtree``, ``fs.rmSync``, ``FileUtils.rm_rf``, ``unlink``) or forks forever is
destructive. A file it opens, reads or writes by a literal path (``open('data.csv', 'w')``,
``fs.writeFileSync('package.json', '')``) is a read or a write of that path, judged by the path
rules; a write that truncates it (with data the command line does not show) replaces it
(``inline_literals``).
"""

from __future__ import annotations

import re

from engine.permissions.effect import Effect
from engine.permissions.inline_literals import SINGLE_ESCAPES, file_accesses, unescape
from engine.permissions.words import Word

_STR = r"""(?:"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)')"""
_SHELL_CALL = re.compile(
    r"\b(?:os\.system|os\.popen|subprocess\.(?:getoutput|getstatusoutput)|system|shell_exec|"
    r"passthru|popen|proc_open|execSync|exec|os\.execute|io\.popen|IO\.popen|"
    r"Open3\.\w+|spawn|%x|run)\s*\(?\s*([rRbBuUfF]{0,2})" + _STR)
_SHELL_TRUE = re.compile(r"\bsubprocess\.\w+\s*\(\s*" + _STR + r"[^)]*shell\s*=\s*True")
_ARGV_CALL = re.compile(r"\b(?:subprocess\.(?:run|call|check_call|check_output|Popen)|"
                        r"pty\.spawn|os\.exec\w*|os\.spawn\w*|spawnSync|spawn|execFileSync|"
                        r"execFile)\s*\(\s*(\[[^\]]{0,2000}\]|" + _STR
                        + r"\s*,\s*\[[^\]]{0,2000}\])")
_BACKTICK = re.compile(r"`([^`]+)`|%x[({\[]([^)}\]]+)[)}\]]|\bqx\s*[({\[/]([^)}\]/]+)")
_TCL = re.compile(r"(?:^|[;\[\n{]\s*)(?:spawn|exec|system)\s+([^;\n\]}]+)")
_DELETES = re.compile(
    r"\b(?:shutil\.rmtree|os\.(?:remove|unlink|rmdir|removedirs)|\.unlink\s*\(|\.rmdir\s*\(|"
    r"fs\.(?:rm|rmSync|rmdir|rmdirSync|unlink|unlinkSync)|rimraf|FileUtils\.(?:rm\w*|remove\w*)|"
    r"File\.(?:delete|unlink)|Dir\.(?:delete|rmdir)|remove_tree|rmtree|unlink\s*[\s(]|"
    r"Deno\.remove|file\.remove|os\.remove|Remove-Item\b|rm\s*\([^)]*recursive\s*=\s*true)|"
    r"\.(?:rmSync|rmdirSync|unlinkSync)\s*\(")
_FORKS = re.compile(r"fork\s+while\s+fork|while\s*\(?\s*(?:True|1|true)\s*\)?\s*[:{]?\s*"
                    r"(?:os\.|process\.|Process\.)?fork|(?:os\.)?fork\(\)\s+while")
_EVALUATES_DECODED = re.compile(
    r"\b(?:exec|eval|compile|execfile|instance_eval|class_eval|module_eval|Function|"
    r"runInThisContext|runInNewContext)\s*[(\s][^\n]{0,400}?"
    r"(?:b64decode|b32decode|b85decode|a85decode|base64|fromhex|unhexlify|decompress|"
    r"zlib|gzinflate|gzdecode|str_rot13|rot13|rot_13|codecs\.decode|\bpack\s*[(\s\"']|"
    r"unpack|atob|Buffer\.from|decode64|unpack1|hex2bin|fromCharCode|\bchr\s*\(|"
    r"\[::-1\]|\.reverse\b|\breverse\s*[(\s])")
"""Code that evaluates text it decodes first (``exec(b64decode(..))``, ``eval pack "H*",
..``, ``eval(Buffer.from(.., 'base64')+'')``): what runs is hidden from the preview by
construction, so it is refused rather than asked (an interpreter one-liner whose code is
shown stays asked)."""
_EVERY_ROW = re.compile(r"\b[A-Z]\w*(?:\.(?:all|unscoped)(?:\(\))?)?\.(?:update_all|delete_all|"
                        r"destroy_all)\b|\.objects(?:\.all\(\))?\.(?:delete|update)\(")
"""``Invoice.update_all(..)``, ``User.delete_all``, ``Order.objects.all().delete()``: every
row of the model's table, like SQL's DELETE or UPDATE with no WHERE (a ``where``/``filter``
before it scopes it)."""
_STRING = re.compile(_STR)
_TCL_LANGS = frozenset({"expect", "tclsh", "wish"})


RUNTIME_WORD = "$runtime_value"
"""Stands in a judged command line for a word the code computes at run time (``"rm -f " $1``):
an unset variable, which the walker treats as a value only known when the command runs."""
_FIELD = re.compile(r"(?<!\{)\{[^{}]*\}(?!\})")
"""A replacement field of a Python f-string (``{d}``, ``{d!r}``); ``{{`` is a brace."""
_CONCATENATED = re.compile(r"\s*(?:\+|\.\.?(?!\d)|,\s*[A-Za-z_$@])")
"""After a literal, an operator that joins a run-time value to it (``+``, ``.``, ``..``) or,
for a call that takes words (``system("rm", f)``), another argument."""


def inline_code(e: Effect, how: str, language: str, code: Word) -> None:
    """Judge the shell commands, deletions and fork loops in one piece of inline code."""
    text = code.value
    if text is None:
        return
    single = language in SINGLE_ESCAPES
    for m in _SHELL_CALL.finditer(text):
        raw = "r" in m.group(1).lower()
        literal = unescape(m.group(2) or "", not raw) if m.group(2) else \
            unescape(m.group(3) or "", single and not raw)
        if "f" in m.group(1).lower():  # f"rm -rf {d}": each field is a run-time value
            literal = _FIELD.sub(RUNTIME_WORD, literal)
        joined = _CONCATENATED.match(text, m.end())
        if joined is not None:  # "rm -f " + d, or system("rm", f): its own word
            literal += (" " if joined.group().lstrip().startswith(",") else "") + RUNTIME_WORD
        e.scripts.append((how, Word.of(literal)))
    for m in _SHELL_TRUE.finditer(text):
        e.scripts.append((how, Word.of(unescape(m.group(1), True) if m.group(1) else
                                       unescape(m.group(2) or "", single))))
    for m in _ARGV_CALL.finditer(text):
        words = [unescape(a, True) if a else unescape(b, single)
                 for a, b in _STRING.findall(m.group(1))]
        if words:
            e.nested.append((how, [Word.of(w) for w in words]))
    for m in _BACKTICK.finditer(text):
        e.scripts.append((how, Word.of(next(g for g in m.groups() if g))))
    if language in _TCL_LANGS:
        for m in _TCL.finditer(text):
            e.scripts.append((how, Word.of(m.group(1).strip().strip('"'))))
    file_accesses(e, language, text)
    if _DELETES.search(text):
        e.add("destructive", f"{how} deletes files")
    if _FORKS.search(text):
        e.add("destructive", f"{how} forks forever (a fork bomb)")
    if _EVERY_ROW.search(text):
        e.add("destructive", f"{how} changes or deletes every row of a table (an ORM's "
                             "mass update or delete with no condition)")
    if _EVALUATES_DECODED.search(text):
        e.add("exec", "")
        e.at_least("deny", f"{how} runs code it decodes at run time, which the command line "
                           "does not show")
