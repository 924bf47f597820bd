"""Where bash joins lines and where its here-documents end, as bash's own reader does.

Bash removes a backslash-newline (a line continuation) in plain text, in double quotes and
in the body of a here-document whose delimiter is not quoted; it keeps it in single quotes,
in ``$'..'``, in a comment (which ends at the newline whatever precedes it) and in a quoted
here-document's body. A here-document ends at the first line equal to its delimiter word
after quote removal (``<<E'O'F`` ends at ``EOF``). The grammar the walker reads does
neither exactly, so the text is first rewritten here: continuations removed where bash
removes them, and each quoted delimiter written as ``'EOF'``, which the grammar ends where
bash does. Were the text read otherwise, a line bash runs could be taken for a comment or
for here-document text: ``ls # \\`` followed by ``rm -rf src`` runs ``rm``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BREAKS = frozenset(" \t\n;|&()<>")
"""Characters after which a ``#`` begins a word (a comment)."""
_WORD_ENDS = frozenset(" \t\n;|&()<>")
_ESCAPED_BLANK_HASH = re.compile(r"\\[ \t]#")


@dataclass
class _Heredoc:
    delimiter: str
    quoted: bool
    strip_tabs: bool


class _Reader:
    """One pass over the text; ``out`` is the rewritten text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.out: list[str] = []
        self.stack: list[list[int | str]] = [["n", 0]]  # state, open parentheses
        self.pending: list[_Heredoc] = []
        self.word_start = True

    def read(self) -> str | None:
        while self.i < len(self.text):
            state = str(self.stack[-1][0])
            step = self._quoted() if state == "d" else self._plain()
            if step is None:
                return None
        return "".join(self.out)

    def _emit(self, chunk: str, word_start: bool = False) -> bool:
        self.out.append(chunk)
        self.i += len(chunk)
        self.word_start = word_start
        return True

    def _escaped(self) -> bool:
        """A backslash: with a newline, a continuation (both removed); else it keeps the
        character after it."""
        if self.text.startswith("\\\n", self.i):
            self.i += 2
            return True
        return self._emit(self.text[self.i:self.i + 2])

    def _plain(self) -> bool | None:
        t, i = self.text, self.i
        c = t[i]
        if c == "\\":
            return self._escaped()
        if c == "'":
            end = t.find("'", i + 1)
            return None if end < 0 else self._emit(t[i:end + 1])
        if t.startswith("$'", i):
            return self._ansi_c()
        if c == '"':
            self.stack.append(["d", 0])
            return self._emit(c)
        if c == "#" and self.word_start:
            end = t.find("\n", i)
            return self._emit(t[i:] if end < 0 else t[i:end])
        if c == "#" and self.out and self.out[-1] in ("\\ ", "\\\t"):
            self.out.append("\\")  # echo \ #; rm x: the # is in the word, not a comment
            return self._emit(c)
        if c == "`":
            if self.stack[-1][0] == "b":
                self.stack.pop()
            else:
                self.stack.append(["b", 0])
            return self._emit(c)
        if t.startswith("$((", i) or (t.startswith("((", i) and self.word_start):
            self.stack.append(["a", 0])
            return self._emit(t[i:i + 3] if c == "$" else t[i:i + 2], True)
        if t.startswith("$(", i):
            self.stack.append(["s", 0])
            return self._emit("$(", True)
        if c in "()":
            return self._paren(c)
        if t.startswith("<<<", i):
            return self._emit("<<<")  # a here-string: one word, no body
        if t.startswith("<<", i) and self.stack[-1][0] != "a":
            return self._heredoc_start()
        if c == "\n":
            self._emit(c, True)
            return self._bodies()
        return self._emit(c, c in _BREAKS)

    def _paren(self, c: str) -> bool:
        top = self.stack[-1]
        if top[0] in ("s", "a"):
            if c == "(":
                top[1] = int(top[1]) + 1
            elif int(top[1]) > 0:
                top[1] = int(top[1]) - 1
            elif top[0] == "s" or self.text.startswith("))", self.i):
                self.stack.pop()
                if top[0] == "a":
                    return self._emit("))")
        return self._emit(c, True)

    def _quoted(self) -> bool | None:
        t, i = self.text, self.i
        c = t[i]
        if c == "\\":
            return self._escaped()
        if c == '"':
            self.stack.pop()
            return self._emit(c)
        if t.startswith("$(", i):
            self.stack.append(["a" if t.startswith("$((", i) else "s", 0])
            return self._emit(t[i:i + 3] if t.startswith("$((", i) else "$(", True)
        if c == "`":
            self.stack.append(["b", 0])
            return self._emit(c)
        return self._emit(c)

    def _ansi_c(self) -> bool | None:
        t, j = self.text, self.i + 2
        while j < len(t) and t[j] != "'":
            j += 2 if t[j] == "\\" else 1
        return None if j >= len(t) else self._emit(t[self.i:j + 1])

    def _heredoc_start(self) -> bool | None:
        t = self.text
        j = self.i + 2
        strip = t.startswith("-", j)
        j += strip
        while j < len(t) and t[j] in " \t":
            j += 1
        start = j
        while j < len(t) and t[j] not in _WORD_ENDS:
            if t[j] in "'\"":
                end = t.find(t[j], j + 1)
                if end < 0:
                    return None
                j = end + 1
            else:
                j += 2 if t[j] == "\\" else 1
        raw = t[start:j]
        if not raw:
            return None
        value, quoted = _unquoted(raw)
        if quoted:
            if "'" in value or "\n" in value:
                return None
            word = f"'{value}'"
        else:
            word = raw
        self.pending.append(_Heredoc(value, quoted, strip))
        self.out.append(t[self.i:start] + word)
        self.i = j
        self.word_start = False
        return True

    def _bodies(self) -> bool:
        """The here-documents begun on the line just ended: each body up to its end line,
        copied as bash reads it (joined lines only where the delimiter is not quoted)."""
        for doc in self.pending:
            while self.i < len(self.text):
                line, after = self._body_line(doc)
                self.i = after
                shown = line.lstrip("\t") if doc.strip_tabs else line
                if shown == doc.delimiter:
                    self.out.append(doc.delimiter if doc.quoted else line)
                    if self.i < len(self.text):
                        self.out.append("\n")
                        self.i += 1
                    break
                self.out.append(line + ("\n" if self.i < len(self.text) else ""))
                self.i += self.i < len(self.text)
        self.pending = []
        self.word_start = True
        return True

    def _body_line(self, doc: _Heredoc) -> tuple[str, int]:
        """The next line of a body and where its newline is; in an unquoted body a line
        ending in an unescaped backslash goes on with the next."""
        t, i, parts = self.text, self.i, []
        while True:
            end = t.find("\n", i)
            end = len(t) if end < 0 else end
            line = t[i:end]
            trailing = len(line) - len(line.rstrip("\\"))
            if doc.quoted or trailing % 2 == 0 or end >= len(t):
                parts.append(line)
                return "".join(parts), end
            parts.append(line[:-1])
            i = end + 1


def _unquoted(raw: str) -> tuple[str, bool]:
    """A delimiter word after quote removal, and whether any of it was quoted."""
    out: list[str] = []
    i, quoted = 0, False
    while i < len(raw):
        c = raw[i]
        if c == "'":
            end = raw.index("'", i + 1)
            out.append(raw[i + 1:end])
            i, quoted = end + 1, True
        elif c == '"':
            j = i + 1
            while raw[j] != '"':
                if raw[j] == "\\" and raw[j + 1] in '$`"\\\n':
                    j += 1
                out.append(raw[j])
                j += 1
            i, quoted = j + 1, True
        elif c == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1])
            i, quoted = i + 2, True
        else:
            out.append(c)
            i += 1
    return "".join(out), quoted


def bash_lines(text: str) -> str | None:
    """``text`` with bash's line continuations removed, its quoted here-document
    delimiters written as ``'WORD'`` and a ``#`` after an escaped blank escaped (it is in
    the word: ``echo \\ #; rm x`` runs rm); None when it cannot be read to its end (an
    unclosed quote)."""
    if "\\\n" not in text and "<<" not in text and not _ESCAPED_BLANK_HASH.search(text):
        return text  # nothing to join, no here-document: as written (most commands)
    return _Reader(text).read()
