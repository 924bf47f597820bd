"""Where the bash grammar reads a command otherwise than bash, and the text that reads alike.

The walker judges the tree the grammar builds, so a word the grammar drops or hangs on the
wrong node is a word nobody judges: ``rm 2>/dev/null a.txt`` parsed as ``rm`` with a
redirection to two files, ``cat - 2>x`` as ``cat`` alone. Bash takes words and redirections
in any order; these functions rewrite the text so the grammar sees the same words in the
same order, and say which text it still leaves out (the walker then fails closed).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from tree_sitter import Node

WHOLE = frozenset({"heredoc_body", "string", "raw_string", "ansi_c_string", "comment",
                   "translated_string"})
"""Nodes whose every byte is text (their children are expansions within it)."""
_CLOSERS = frozenset({"<&-", ">&-"})
"""``3<&-`` closes a descriptor: the grammar takes the next word as its target."""
MAX_REWRITES = 16
_REDIRECTED = frozenset({"redirected_statement"})
_TEXT = re.compile(rb"[^ \t\r\n\\]")
_NAMED_FD = re.compile(rb"\{[A-Za-z_]\w*\}")
READ_WRITE_MARK = b"\x0b"
"""Put for the ``>`` of ``<>`` (open for reading and writing), which the grammar does not
know: it reads ``<`` and a blank, and the walker reads ``<>`` back."""


def stray_words(statement: Node) -> list[Node]:
    """The words the grammar hung on the redirections of ``statement`` (a
    ``redirected_statement``) that bash passes to its command: a file redirection's
    targets after the first (every one after a descriptor is closed), and the words after
    a here-doc's delimiter (``rm <<EOF a.txt``)."""
    out: list[Node] = []
    for child in statement.children:
        if child.type == "file_redirect":
            targets = child.children_by_field_name("destination")
            closes = any(c.type in _CLOSERS for c in child.children)
            out.extend(targets if closes else targets[1:])
        elif child.type == "heredoc_redirect":
            out.extend(child.children_by_field_name("argument"))
    return out


def _command(statement: Node) -> Node | None:
    """The simple command a redirected statement redirects (also under ``!``)."""
    body = statement.child_by_field_name("body")
    if body is not None and body.type == "negated_command" and body.named_children:
        body = body.named_children[0]
    return body


def named_descriptor(statement: Node, src: bytes) -> Node | None:
    """``{fd}`` of ``truncate -s {fd}>/dev/null 0 f``: bash allocates a descriptor and
    stores it in ``fd``; the grammar reads ``{fd}`` as the command's last argument (``exec
    {fd}>f`` is the walker's to read)."""
    body = _command(statement)
    redirect = next((c for c in statement.named_children if c.type == "file_redirect"), None)
    if body is None or body.type != "command" or redirect is None:
        return None
    name = body.child_by_field_name("name")
    args = body.children_by_field_name("argument")
    last = args[-1] if args else None
    if name is None or src[name.start_byte:name.end_byte] == b"exec" or last is None or \
            last.end_byte != redirect.start_byte or last.type != "concatenation":
        return None
    text = src[last.start_byte:last.end_byte]
    return last if _NAMED_FD.fullmatch(text) else None


def input_zero(statement: Node, src: bytes) -> Node | None:
    """The ``0`` of ``cmd 0<f`` (``0<&3``, ``0<>f``), which the grammar reads as the
    command's last argument; ``<`` means descriptor 0 without it."""
    body = _command(statement)
    redirect = next((c for c in statement.named_children if c.type == "file_redirect"), None)
    args = body.children_by_field_name("argument") if body is not None and \
        body.type == "command" else []
    last = args[-1] if args else None
    if last is None or redirect is None or last.type != "number" or \
            src[last.start_byte:last.end_byte] != b"0" or last.end_byte != redirect.start_byte:
        return None
    return last if src.startswith(b"<", redirect.start_byte) else None


def words_moved(src: bytes, root: Node) -> bytes | None:
    """``src`` with the stray words of the first redirected statement that has any moved
    before its first redirection (``rm 2>/dev/null a.txt`` -> ``rm a.txt 2>/dev/null``);
    None when there are none."""
    if b"<" not in src and b">" not in src:
        return None
    for node in _walk(root, _REDIRECTED):
        named = named_descriptor(node, src)
        if named is not None:  # {fd}>f -> 10>f (fd itself stays unknown to the walker)
            return src[:named.start_byte] + b"10" + src[named.end_byte:]
        zero = input_zero(node, src)
        if zero is not None:  # cmd 0<f -> cmd <f (the grammar reads 0 as an argument)
            return src[:zero.start_byte] + src[zero.end_byte:]
        strays = stray_words(node)
        zeros = [w for w in strays if w.type == "number" and src[w.start_byte:w.end_byte]
                 == b"0" and src.startswith(b"<", w.end_byte)]
        if zeros:  # cmd 2>x 0<f: the 0 is the second redirection's descriptor
            return src[:zeros[0].start_byte] + src[zeros[0].end_byte:]
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c.type.endswith("redirect")
                     and (body is None or c.id != body.id)]
        if strays and redirects:
            at = min(r.start_byte for r in redirects)
            out = bytearray(src[:at])  # {fd}>f: the grammar's word before stays apart
            out += b" " + b" ".join(src[w.start_byte:w.end_byte] for w in strays) + b" "
            pos = at
            for w in sorted(strays, key=lambda n: n.start_byte):
                out += src[pos:w.start_byte]
                pos = w.end_byte
            out += src[pos:]
            return bytes(out)
    return None


def assignments_ended(src: bytes, root: Node) -> bytes | None:
    """``src`` with a ``;`` after each line of two or more assignments that the grammar
    joins to the next line's command inside a block (``do a=1 b=2 <newline> rm x``, read as
    ``rm`` run with a and b in its environment): to bash the line ends there, the
    variables are set in the shell and the next line is a command of its own. None when
    there is none."""
    if src.count(b"=") < 2 or b"\n" not in src:
        return None
    spots = []
    for node in _walk(root, _COMMANDS):
        kids = node.named_children
        at = next((k for k, c in enumerate(kids) if c.type == "command_name"), None)
        if at is None or at < 2 or kids[at - 1].type != "variable_assignment":
            continue
        end = kids[at - 1].end_byte
        if _LINE_ENDS.search(src[end:kids[at].start_byte]):
            spots.append(end)
    if not spots:
        return None
    out = bytearray(src)
    for at in sorted(spots, reverse=True):
        out[at:at] = b";"
    return bytes(out)


_COMMANDS = frozenset({"command"})
_LINE_ENDS = re.compile(rb"(?<!\\)\n")
"""A newline no backslash continues."""


def _walk(root: Node, types: frozenset[str]) -> Iterator[Node]:
    """The nodes of ``types`` under ``root``, in the order of the text (a cursor: no node
    object is made for the others)."""
    cursor = root.walk()
    while True:
        if cursor.node is not None and cursor.node.type in types:
            yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def closers_quoted(src: bytes, root: Node) -> bytes | None:
    """``src`` with each ``N<&-``/``N>&-`` that the grammar reads as taking the next word
    (``rm 3<&- -f a.txt``, read as a parse error or a new command) written ``N<&"-"``: to
    bash the same (a word that expands to ``-`` closes the descriptor), to the grammar a
    redirection whose target is ``"-"`` and whose further words are strays
    (``words_moved``). None when there is none."""
    if b"&-" not in src:
        return None
    found = [node for node in _walk(root, _CLOSERS) if node.next_sibling is not None
             and node.parent is not None and node.parent.type == "file_redirect"]
    if not found:
        return None
    out = bytearray()
    pos = 0
    for node in sorted(found, key=lambda n: n.start_byte):
        out += src[pos:node.start_byte] + src[node.start_byte:node.end_byte - 1] + b'"-"'
        pos = node.end_byte
    return bytes(out + src[pos:])


def closers_restored(src: bytes) -> bytes:
    """``<&"-"`` back to ``<&-`` once the words after it were moved before it."""
    return src.replace(b'<&"-"', b"<&-").replace(b'>&"-"', b">&-")


def uncovered(src: bytes, root: Node) -> list[int]:
    """Offsets of the bytes (not blanks or line continuations) no node of the tree holds:
    text the grammar dropped."""
    left = bytearray(src)  # what no node holds, the rest blanked
    cursor = root.walk()
    while True:
        node = cursor.node
        whole = node is not None and node.type in WHOLE
        if node is not None and (whole or node.child_count == 0):
            left[node.start_byte:node.end_byte] = b" " * (node.end_byte - node.start_byte)
        if not whole and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return [m.start() for m in _TEXT.finditer(left)
                        if src[m.start() - 1:m.end()] != b"<" + READ_WRITE_MARK]


def read_write_marked(src: bytes, root: Node) -> bytes | None:
    """``src`` with the ``>`` of each ``<>`` operator replaced by ``READ_WRITE_MARK``; None
    when it has none. Found among the tree's tokens (a ``<`` and a ``>`` side by side), so a
    ``<>`` in quotes or in a here-document stays as it is."""
    leaves: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0:
            leaves.append(node)
        stack.extend(reversed(node.children))
    spots = [b.start_byte for a, b in itertools.pairwise(leaves)
             if a.type == "<" and b.type == ">" and a.end_byte == b.start_byte]
    if not spots:
        return None
    out = bytearray(src)
    for at in spots:
        out[at:at + 1] = READ_WRITE_MARK
    return bytes(out)


def dashes_quoted(src: bytes, offsets: list[int]) -> bytes | None:
    """``src`` with each dropped lone ``-`` (``cat - 2>x``, ``python3 - <<EOF``) written as
    ``'-'``, the same word to bash, which the grammar keeps; None when other text was
    dropped (or none was)."""
    lone = [i for i in offsets if src[i:i + 1] == b"-"
            and (i == 0 or src[i - 1:i] in b" \t\n") and src[i + 1:i + 2] in b" \t\n"]
    if not offsets or len(lone) != len(offsets):
        return None
    out = bytearray()
    pos = 0
    for i in lone:
        out += src[pos:i] + b"'-'"
        pos = i + 1
    return bytes(out + src[pos:])
