"""Rules for code generators and their checks: protobuf (``buf``, ``protoc``) and Go's
generators and linters (``golangci-lint``, ``wire``, ``sqlc``, ``mockgen``).

Each of them has a checking mode that reads the sources and prints (``buf lint``, ``sqlc
compile``, ``mockgen -source=F`` to stdout) one option away from the mode that writes
generated files or runs a plugin program. What builds the Go packages to check them
(``golangci-lint run``, ``wire check``, like ``go vet``) runs the compilers cgo names:
asked. A plugin is code: ``protoc --go_out=gen`` runs ``protoc-gen-go`` from PATH, a
``buf.yaml`` may name check plugins, ``sqlc.yaml`` process plugins, ``.golangci.yml`` custom
linters, and ``mockgen`` in reflect mode builds and runs a program. Those stay asked.
"""

from __future__ import annotations

from engine.permissions.effect import Effect, Loads, Rule, prog
from engine.permissions.rules_langs import Queries, query_rule
from engine.permissions.shell_paths import no_file
from engine.permissions.words import Word

_F = frozenset


def _v(*verbs: str) -> frozenset[tuple[str, ...]]:
    return _F(tuple(v.split()) if v else () for v in verbs)


_GOLANGCI_CONFIGS = (".golangci.yml", ".golangci.yaml", ".golangci.toml", ".golangci.json")
QUERIES: dict[str, Queries] = {
    "golangci-lint": Queries(_v("linters", "help", "version", "config path",
                                "config verify"),
                             writes=_F({"--fix", "--build-tags-file"}),
                             files=_F({"-c", "--config", "--new-from-patch"}),
                             loads=(Loads(_GOLANGCI_CONFIGS, ("custom", "plugins"),
                                          upward=True),),
                             why="builds the packages to lint them (cgo runs the C "
                                 "compiler), fixes files or loads custom linters"),
    "wire": Queries(_v("help"), why="builds the packages or writes wire_gen.go"),
    "sqlc": Queries(_v("compile", "diff", "version", "help"),
                    files=_F({"-f", "--file"}),
                    loads=(Loads(("sqlc.yaml", "sqlc.yml", "sqlc.json"), ("plugins",)),),
                    why="writes generated code, pushes to the cloud or queries a database"),
}
"""Per program: what of its command lines only reads (``rules_langs.Queries``)."""

_BUF_READS = _F({"lint", "breaking", "ls-files", "format", "build", "config", "help",
                 "--version", "version"})
_BUF_WRITES = _F({"-w", "--write"})
_BUF_OUTPUTS = _F({"-o", "--output"})


def _buf(e: Effect, args: list[Word]) -> None:
    """``buf lint``, ``buf breaking --against .git#branch=main``, ``buf format -d``, ``buf
    build -o /dev/null``: read the module (and its check plugins, when ``buf.yaml`` names
    any); ``-o FILE`` writes that file, ``format -w`` the sources; ``generate`` runs the
    plugins of ``buf.gen.yaml``; ``push``, ``registry``, ``export`` write or publish."""
    words = [w.value for w in args]
    if None in words:
        e.add("exec", f"{prog(e)} with a word only known at run time may write (-o FILE)")
        return
    if not words or words[0] not in _BUF_READS:
        e.add("exec", f"{prog(e)} generates code, publishes, exports or changes the module")
        return
    if words[0] == "config" and not (words[1:2] and (words[1] or "").startswith("ls-")):
        e.add("write", "buf config init/migrate writes buf.yaml")
        return
    for i, w in enumerate(words):
        name, eq, value = (w or "").partition("=")
        if name in _BUF_WRITES:
            e.add("write", "buf format -w rewrites the sources")
        elif name in _BUF_OUTPUTS:
            _output(e, Word.of(value) if eq else args[i + 1] if i + 1 < len(args)
                    else Word(None, "<output>", "other"))
    e.loads_here.append(Loads(("buf.yaml", "buf.work.yaml"), ("plugins",)))


_PROTOC_FLAGS = frozenset({"--include_imports", "--include_source_info", "--retain_options",
                           "--decode_raw", "--version", "--deterministic_output",
                           "--fatal_warnings", "--print_free_field_numbers", "-h", "--help"})
"""protoc's options without a value that parse, check or decode: no plugin runs."""
_PROTOC_VALUES = {"-I": "read", "--proto_path": "read", "--descriptor_set_in": "read",
                  "-o": "write", "--descriptor_set_out": "write", "--decode": "",
                  "--error_format": ""}
"""protoc's options with a value: folders imports are looked for in and descriptor sets read
(judged as reads), the descriptor set written, a message name or a format. Any
``--NAME_out``/``--NAME_opt`` or ``--plugin`` runs ``protoc-gen-NAME``."""


def _protoc_words(args: list[Word]) -> list[tuple[str, Word]] | None:
    """Each word as (option, value): ``-Iproto``, ``-I proto``, ``--proto_path=proto`` all
    ("-I"/"--proto_path", proto); a file to compile as ("", FILE); None for an option that
    runs a plugin or a word only known at run time."""
    out: list[tuple[str, Word]] = []
    it = iter(args)
    for w in it:
        v = w.value
        if v is None:
            return None
        name, eq, value = v.partition("=")
        if v in _PROTOC_FLAGS:
            continue
        if name in _PROTOC_VALUES and eq:
            out.append((name, Word.of(value)))
        elif v in _PROTOC_VALUES:
            out.append((v, next(it, Word(None, "<missing>", "other"))))
        elif v[:2] in ("-I", "-o") and len(v) > 2:
            out.append((v[:2], Word.of(v[2:])))
        elif v.startswith("-"):
            return None
        else:
            out.append(("", w))
    return out


def _protoc(e: Effect, args: list[Word]) -> None:
    """``protoc -I proto --descriptor_set_out=/dev/null a.proto`` checks the files and
    writes a descriptor set (to that file); an output for a language runs its plugin."""
    words = _protoc_words(args)
    if words is None:
        e.add("exec", "protoc runs a plugin program or writes generated code")
        return
    for option, value in words:
        kind = _PROTOC_VALUES.get(option, "read") if option else "read"
        if kind == "write":
            _output(e, value)
        elif kind == "read":
            e.reads.append(value)


def _output(e: Effect, out: Word) -> None:
    """The file an output option names: written, unless a stream (``/dev/null``,
    ``/dev/stdout``)."""
    if no_file(out.value):
        return
    e.writes.append(out)
    e.add("write", f"{prog(e)} writes {out.shown}")


def _mockgen(e: Effect, args: list[Word]) -> None:
    """``mockgen -source=F`` parses F and prints the mock; ``-destination`` writes it, and
    reflect mode (``mockgen PKG Iface``) builds and runs a program to inspect PKG."""
    words = [w.value or "" for w in args]
    source = next((w.split("=", 1)[1] for w in words if w.startswith(("-source=",
                                                                         "--source="))), None)
    if source is None and "-source" in words[:-1]:
        source = words[words.index("-source") + 1]
    if None in (w.value for w in args) or source is None or any(
            w.lstrip("-").split("=")[0] in ("destination", "write_source_comment",
                                            "exec_only", "build_flags", "debug_parser")
            for w in words):
        e.add("exec", "mockgen writes the mock or builds and runs a program to read the "
                      "package")
        return
    e.reads.append(Word.of(source))


RULES: dict[str, Rule] = {name: query_rule(name, None, QUERIES) for name in QUERIES}
RULES.update({"buf": _buf, "protoc": _protoc, "mockgen": _mockgen})
