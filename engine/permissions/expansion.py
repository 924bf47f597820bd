"""Static expansion: what ``echo`` and ``printf`` print, for ``$(echo rm) -rf dir``, and what
decoders and filters (``base64 -d``, ``rev``, ``tr``, ``xxd -r -p``) make of known input.

Only what can be known without running anything; None when a format is not understood.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re

_SPEC = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?([sbdiuxXocq]))")
_OCTAL = re.compile(r"\\0?([0-7]{1,3})")


def unescape(text: str) -> str | None:
    """Backslash escapes as ``echo -e`` and ``printf`` read them (``\\x72``, ``\\0162``);
    None for ``\\c``, which ends the output there (``printf %b '-delete\\cx'``)."""
    if re.search(r"(?<!\\)(?:\\\\)*\\c", text):
        return None
    text = _OCTAL.sub(lambda m: "\\x%02x" % (int(m.group(1), 8) & 0xFF), text)
    try:
        return codecs.decode(text.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return None


def echo_output(args: list[str], xpg_echo: bool = False) -> str | None:
    """The line ``echo ARGS`` prints (``-n``, ``-e``, ``-E`` understood; with bash's
    ``xpg_echo`` option, escapes are read unless ``-E``)."""
    escapes = xpg_echo
    while args and re.fullmatch(r"-[neE]+", args[0]):
        escapes = "e" in args[0] or (escapes and "E" not in args[0])
        args = args[1:]
    text = " ".join(args)
    return unescape(text) if escapes else text


MAX_SEQ = 1000
"""Numbers ``seq_output`` computes (a longer sequence is only known at run time)."""


def seq_output(args: list[str]) -> str | None:
    """What ``seq [FIRST [STEP]] LAST`` prints for whole numbers; None for options, other
    numbers or more than ``MAX_SEQ`` of them."""
    if not 1 <= len(args) <= 3 or not all(re.fullmatch(r"-?\d{1,9}", a) for a in args):
        return None
    nums = [int(a) for a in args]
    first, step, last = (1, 1, nums[0]) if len(nums) == 1 else (
        (nums[0], 1, nums[1]) if len(nums) == 2 else (nums[0], nums[1], nums[2]))
    if step == 0 or (last - first) // step + 1 > MAX_SEQ:
        return None
    return "".join(f"{n}\n" for n in range(first, last + (1 if step > 0 else -1), step))


def path_part_output(program: str, args: list[str]) -> str | None:
    """What ``dirname PATH..`` or ``basename PATH [SUFFIX]`` prints (GNU coreutils: trailing
    slashes dropped, ``.`` for a name with no folder); None with options."""
    if not args or any(a.startswith("-") for a in args):
        return None
    if program == "dirname":
        return "".join(_dirname(a) + "\n" for a in args)
    if len(args) > 2:
        return None
    name = args[0].rstrip("/") or ("/" if args[0] else "")
    base = name.rpartition("/")[2] or name
    suffix = args[1] if len(args) == 2 else ""
    if suffix and base != suffix and base.endswith(suffix):
        base = base[:-len(suffix)]
    return base + "\n"


def _dirname(path: str) -> str:
    name = path.rstrip("/")
    if not name:
        return "/" if path else "."
    head, slash, _ = name.rpartition("/")
    if not slash:
        return "."
    return head.rstrip("/") or "/"


def printf_output(args: list[str]) -> str | None:
    """What ``printf FORMAT ARGS`` prints, the format reused while arguments remain."""
    if not args or args[0].startswith("-"):
        return None
    fmt, rest = args[0], list(args[1:])
    out: list[str] = []
    for _ in range(64):
        piece = _format_once(fmt, rest)
        if piece is None:
            return None
        out.append(piece)
        if not rest or not _SPEC.search(fmt.replace("%%", "")):
            break
    return "".join(out)


def _format_once(fmt: str, rest: list[str]) -> str | None:
    """One pass of FORMAT: escapes are read in the format's own text and in ``%b``
    arguments only (``printf %s '\\t'`` prints a backslash and a t, not a tab)."""
    if "%" in _SPEC.sub("", fmt):  # %q, %(..)T, %*d, %f...: not computed here
        return None
    out: list[str] = []
    at = 0
    for m in _SPEC.finditer(fmt):
        literal = unescape(fmt[at:m.start()])
        piece = "%" if m.group(0) == "%%" else _converted(m, rest.pop(0) if rest else "")
        if literal is None or piece is None:
            return None
        out += [literal, piece]
        at = m.end()
    tail = unescape(fmt[at:])
    return None if tail is None else "".join(out) + tail


def shell_quoted(value: str) -> str | None:
    """What bash's ``printf %q`` prints for printable text: each special character
    escaped with a backslash (``''`` for nothing); None for control characters."""
    if value == "":
        return "''"
    if not (value.isprintable() and value.isascii()):
        return None  # $'..' forms and the locale's letters: not computed here
    return re.sub(r"([^A-Za-z0-9_./:=+@%-])", r"\\\1", value)


def _converted(m: re.Match[str], value: str) -> str | None:
    """One conversion of one argument; None when it cannot be computed."""
    conv = m.group(1)
    if conv == "b":
        decoded = unescape(value)
        return None if decoded is None else _padded(m.group(0), decoded)
    if conv == "q":
        quoted = shell_quoted(value)
        return None if quoted is None else _padded(m.group(0).replace("q", "s"), quoted)
    if conv in "diuxXo":
        try:
            return m.group(0) % int(value or "0", 0)
        except ValueError:
            return None
    return _padded(m.group(0), value[:1] if conv == "c" else value)


def _padded(spec: str, text: str) -> str:
    """``text`` under a ``%-5.2s``-style spec's width and precision."""
    try:
        return (spec[:-1] + "s") % text
    except (ValueError, TypeError):
        return text


def filter_output(argv: list[str], text: str) -> str | None:
    """What a decoder or filter prints for ``text`` on its input, or None."""
    name, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    try:
        if name == "base64" and set(args) & {"-d", "--decode", "-D"}:
            return base64.b64decode("".join(text.split()), validate=False).decode(
                "utf-8", "surrogateescape")
        if name == "xxd" and "-r" in args and "-p" in args:
            return bytes.fromhex("".join(text.split())).decode("utf-8", "surrogateescape")
    except (binascii.Error, ValueError):
        return None
    if name == "rev" and not args:
        return "\n".join(line[::-1] for line in text.rstrip("\n").split("\n")) + "\n"
    if name == "cat" and not args:
        return text
    if name == "tr" and len(args) == 2 and not args[0].startswith("-"):
        src, dst = _tr_set(args[0]), _tr_set(args[1])
        if src is None or dst is None or not dst:
            return None
        dst = dst + dst[-1] * max(0, len(src) - len(dst))
        return text.translate(str.maketrans(src, dst[:len(src)]))
    return None


def _tr_set(spec: str) -> str | None:
    """A ``tr`` set with ranges (``a-z``); None for classes and escapes."""
    if "[" in spec or "\\" in spec:
        return None
    out: list[str] = []
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            a, b = ord(spec[i]), ord(spec[i + 2])
            if b < a:
                return None
            out.extend(chr(c) for c in range(a, b + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


_OPERATOR = re.compile(r"\$\{([A-Za-z_]\w*)(\^\^|,,|\^|,|##|#|%%|%|//|/#|/%|/|@[UuLEQ])(.*)\}",
                       re.S)


_SUBSTRING = re.compile(r"\$\{([A-Za-z_]\w*):(?![-=+?])\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\}")
"""``${x:2}``, ``${x: -3}``, ``${x:0:2}``, ``${x:1:-1}`` with literal numbers (``${x:-y}``
is a default value, not this)."""


def parameter_operator(text: str) -> tuple[str, str, str] | None:
    """``${x^^}``, ``${x#pat}``, ``${x/pat/rep}``, ``${x@U}``, ``${x:1:2}``: (name, operator,
    argument), or None for another form."""
    sub = _SUBSTRING.fullmatch(text)
    if sub is not None:
        return sub.group(1), ":", f"{sub.group(2)}:{sub.group(3) or ''}"
    m = _OPERATOR.fullmatch(text)
    return None if m is None else (m.group(1), m.group(2), m.group(3))


def _substring(value: str, arg: str) -> str | None:
    """bash's ``${x:OFFSET:LENGTH}``: a negative offset counts from the end (before the
    start: empty), a negative length is an end counted from the end; None where bash fails
    (an end before the start)."""
    offset_text, _, length_text = arg.partition(":")
    found = _arithmetic_number(offset_text)
    if found is None or (length_text and _arithmetic_number(length_text) is None):
        return None
    n, offset = len(value), found
    start = offset if offset >= 0 else n + offset
    if start < 0:
        return ""
    if not length_text:
        return value[start:]
    length = _arithmetic_number(length_text) or 0
    end = start + length if length >= 0 else n + length
    return None if end < start else value[start:end]


def _arithmetic_number(text: str) -> int | None:
    """A literal number as bash's arithmetic reads it: ``010`` is octal (8); None for one
    it refuses (``08``)."""
    digits = text.lstrip("-")
    try:
        found = int(digits, 8) if len(digits) > 1 and digits.startswith("0") else int(digits)
    except ValueError:
        return None
    return -found if text.startswith("-") else found


def apply_operator(value: str, op: str, arg: str) -> str | None:
    """What bash makes of ``value`` under one operator; None when the pattern or the word
    holds what is not computed here (quotes, escapes, expansions, classes)."""
    if op == ":":
        return _substring(value, arg)
    if op in _CASES:
        return None if arg else _cased(value, op)
    if op == "@E":
        return None if arg else unescape(value)
    if op == "@Q":
        return None if arg else single_quoted(value)
    if re.search(r"[$`'\"\\]|\[[:=.]|[?*+@!]\(", arg):
        return None  # quotes, classes, and extglob's +(..) (bash may match them): not here
    if op in ("#", "##", "%", "%%"):
        return _trimmed(value, op, arg)
    pat, _, rep = arg.partition("/")
    return _replaced(value, op, pat, rep)


def _put(rep: str, matched: str) -> str:
    """bash 5.2's ``patsub_replacement``: ``&`` in the replacement is the matched text
    (``x=-delete; ${x/*/&}`` is ``-delete``); a quoted or escaped one never reaches here."""
    return rep.replace("&", matched)


_CASES = ("^^", ",,", "^", ",", "@U", "@u", "@L")


def single_quoted(value: str) -> str | None:
    """What bash's ``${x@Q}`` gives: the value in single quotes (a quote in it as
    quote-backslash-quote-quote); None for a value bash writes as ``$'..'`` (control
    characters) or by the locale (other than ASCII)."""
    if any(ord(ch) < 32 or ord(ch) > 126 for ch in value):
        return None
    return "'" + value.replace("'", "'\\''") + "'"


def _cased(value: str, op: str) -> str | None:
    if op in ("^^", "@U"):
        return value.upper()
    if op in (",,", "@L"):
        return value.lower()
    if op in ("^", "@u"):
        return value[:1].upper() + value[1:]
    if op == ",":
        return value[:1].lower() + value[1:]
    return None


def _matches(text: str, pattern: str) -> bool:
    return re.fullmatch(_glob_regex(pattern), text, re.S) is not None


def glob_match(text: str, pattern: str, literal: bool = False) -> bool:
    """Whether ``text`` matches a shell pattern (``*``, ``?``, ``[..]``); a quoted pattern
    matches only itself."""
    return text == pattern if literal else _matches(text, pattern)


def _glob_regex(pattern: str) -> str:
    """A shell pattern as a regex: ``*``, ``?`` and bracket expressions with ranges and
    ``!``/``^`` negation (``[A-Z]`` matches ``Q``: bash 5.2's globasciiranges)."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        end = _bracket_end(pattern, i) if ch == "[" else -1
        if end > 0:
            body = pattern[i + 1:end]
            negated = body[:1] in ("!", "^")
            body = body[1:] if negated else body
            out.append("[" + ("^" if negated else "") + "".join(
                c if c == "-" else re.escape(c) for c in body) + "]")
            i = end + 1
            continue
        out.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
        i += 1
    return "".join(out)


def _bracket_end(pattern: str, start: int) -> int:
    """Where the bracket expression opening at ``start`` ends (a ``]`` right after the
    opening, or after its ``!``/``^``, belongs to it); -1 when it does not end."""
    j = start + 1
    if pattern[j:j + 1] in ("!", "^"):
        j += 1
    if pattern[j:j + 1] == "]":
        j += 1
    end = pattern.find("]", j)
    return end


def _trimmed(value: str, op: str, pat: str) -> str:
    """``#``/``##`` the shortest/longest matching prefix, ``%``/``%%`` suffix."""
    sizes = range(len(value) + 1)
    order = reversed(sizes) if op in ("##", "%%") else sizes
    for n in order:
        if op[0] == "#" and _matches(value[:n], pat):
            return value[n:]
        if op[0] == "%" and _matches(value[len(value) - n:], pat):
            return value[:len(value) - n]
    return value


def _replaced(value: str, op: str, pat: str, rep: str) -> str:
    """``/`` the first longest match, ``//`` every one, ``/#`` at the start, ``/%`` at
    the end."""
    if not pat:  # ${x/#/p} prefixes, ${x/%/s} appends, ${x//} changes nothing
        return _put(rep, "") + value if op == "/#" else value + _put(rep, "") \
            if op == "/%" else value
    if not value and op in ("/", "//"):  # x=; ${x/*/rm}: * matches the empty value
        return _put(rep, "") if _matches("", pat) else value
    if op == "/#":
        n = next((n for n in range(len(value), -1, -1) if _matches(value[:n], pat)), None)
        return value if n is None else _put(rep, value[:n]) + value[n:]
    if op == "/%":
        n = next((n for n in range(len(value) + 1) if _matches(value[n:], pat)), None)
        return value if n is None else value[:n] + _put(rep, value[n:])
    out, i = [], 0
    while i < len(value):
        end = next((j for j in range(len(value), i, -1) if _matches(value[i:j], pat)), None)
        if end is None:
            out.append(value[i])
            i += 1
            continue
        out.append(_put(rep, value[i:end]))
        i = end
        if op == "/":
            return "".join(out) + value[i:]
    return "".join(out)
