"""Rules for tools that read tabular and structured data files: csvkit, Miller, xsv and qsv,
parquet-tools, notebooks (jupyter nbconvert, nbstripout).

They print what they compute from the files they are given; what writes is named here: an
in-place edit (``mlr -I``), an output file (``-o``), a database a table is inserted into
(``csvsql --db``), a verb that writes files (``xsv split``, ``mlr tee``), and code they run
(Miller's ``system``/``exec``, qsv's Lua and Python).
"""

from __future__ import annotations

import re

from engine.permissions.effect import Effect, Loads, Rule, parse_opts, prog, reader
from engine.permissions.rules_infra import apply_sql
from engine.permissions.words import Word

_F = frozenset

# ---------------------------------------------------------------- csvkit

_CSVKIT_READERS = ("csvlook", "csvstat", "csvcut", "csvgrep", "csvjoin", "csvsort",
                   "csvformat", "csvjson", "in2csv", "csvstack")
"""csvkit tools that print to standard output only (every word may be a file they read)."""


def _csvsql(e: Effect, args: list[Word]) -> None:
    """``csvsql data.csv`` prints a CREATE TABLE and ``--query`` runs SQL on an in-memory
    copy; with ``--db URL`` it works on that database: ``--insert`` adds rows, the SQL given
    is judged, ``--overwrite`` drops the table first."""
    words = [w.value for w in args]
    db = _value_of(args, "--db")
    sqls = [w for w in (_value_of(args, k) for k in ("--query", "--before-insert",
                                                     "--after-insert")) if w is not None]
    e.reads.extend(w for w in args if not (w.value or "-").startswith("-") and w not in sqls
                   and w is not db)
    if db is None:
        return
    e.add("network" if not (db.value or "").startswith("sqlite") else "write",
          "csvsql --db works on a database")
    for sql in sqls:
        apply_sql(e, "csvsql", sql)
    if "--insert" in words:
        e.add("write", "csvsql --insert adds rows to the database")
    if "--overwrite" in words:
        e.add("destructive", "csvsql --overwrite drops the table before it inserts")


def _value_of(args: list[Word], name: str) -> Word | None:
    for i, w in enumerate(args):
        key, eq, value = (w.value or "").partition("=")
        if key == name:
            return Word.of(value) if eq else (args[i + 1] if i + 1 < len(args) else None)
    return None


# ---------------------------------------------------------------- Miller

_MLR_WRITES = _F({"tee", "split"})
_MLR_DSL = _F({"put", "filter"})
_MLR_RUNS = re.compile(r"\b(?:system|exec)\s*\(|\b(?:tee|emit\w*|print\w*|dump)\s*[>|]")
"""DSL that runs a command or redirects output into a file or a pipe."""
_MLR_COMMAND = re.compile(r'\b(?:system|exec)\s*\(\s*"((?:\\.|[^"\\])*)"')


def _mlr(e: Effect, args: list[Word]) -> None:
    """``mlr --icsv --opprint stats1 -a mean -f x data.csv`` reads; ``-I`` edits the files
    in place, ``tee``/``split`` write files, ``put``/``filter`` code that calls ``system``
    or redirects runs or writes, ``-f``/``-s`` load code from a file and ``--prepipe`` is a
    shell command."""
    words = [w.value for w in args]
    prepipes = [args[i + 1] for i, v in enumerate(words[:-1])
                if v in ("--prepipe", "--prepipex")]
    for pipe in prepipes:  # --prepipe 'gunzip <': a shell command each file goes through
        e.scripts.append(("mlr --prepipe", pipe))
        e.add("exec", "mlr --prepipe runs a shell command")
    e.reads.extend(w for w in args if not (w.value or "-").startswith("-") and w not in prepipes)
    if "-I" in words:
        e.writes.extend(w for w in args if not (w.value or "-").startswith("-"))
        e.add("write", "mlr -I edits the files in place")
    if any(v in _MLR_WRITES for v in words):
        e.add("write", "mlr tee/split writes files")
    for i, v in enumerate(words):
        if v not in _MLR_DSL:
            continue
        rest = [w for w in words[i + 1:]]
        if any(r in ("-f", "-s", "--load", "--mload") for r in rest[:4]):
            e.add("exec", f"mlr {v} runs code from a file")
        code = next((r for r in rest if r is None or not r.startswith("-")), "")
        if code is None or _MLR_RUNS.search(code):
            e.add("exec", f"mlr {v} code runs a command or writes a file")
        for m in _MLR_COMMAND.finditer(code or ""):  # system("rm -rf x"): judged as run
            e.scripts.append((f"mlr {v} system", Word.of(m.group(1))))


# ---------------------------------------------------------------- xsv, qsv, parquet-tools

_XSV_READ = _F({"count", "fixlengths", "flatten", "fmt", "frequency", "headers", "input",
                "join", "sample", "search", "select", "slice", "sort", "stats", "table", "cat",
                "reverse", "sniff", "dedup", "exclude", "rename", "replace", "transpose",
                "sortcheck", "searchset", "enum", "explode", "fill", "behead", "safenames",
                "tojsonl", "jsonl", "excel", "diff", "datefmt", "pseudo"})
"""Commands of xsv and qsv that print what they compute (``split``, ``index``, ``to``,
``schema`` write files; ``luau``, ``py``, ``fetch`` run code or use the network)."""


def _xsv(e: Effect, args: list[Word]) -> None:
    verb = args[0].value if args else None
    e.reads.extend(w for w in args[1:] if not (w.value or "-").startswith("-"))
    outputs = [_value_of(args, name) for name in {"-o", *(
        (w.value or "").split("=")[0] for w in args if "output" in (w.value or ""))}]
    for out in (o for o in outputs if o is not None):  # -o, --dupes-output FILE
        e.writes.append(out)
        e.replaces.append(out)
        e.add("write", f"{prog(e)} writes {out.shown}")
    if verb not in _XSV_READ:
        e.add("exec", f"{prog(e)} {verb or ''} is not a command that only prints".replace(
            "  ", " "))


_PARQUET_READ = _F({"show", "csv", "inspect", "schema", "cat", "head", "meta", "rowcount",
                    "dump", "size", "column-index", "footer"})


def _parquet_tools(e: Effect, args: list[Word]) -> None:
    """``parquet-tools show/csv/inspect/schema FILE`` print; ``merge``/``split`` write."""
    verb = args[0].value if args else None
    files = [w for w in args[1:] if not (w.value or "-").startswith("-")]
    if any("://" in (w.value or "://") for w in files):
        e.add("network", "parquet-tools reads a remote file (s3://, gs://, https://)")
    e.reads.extend(w for w in files if "://" not in (w.value or "://"))
    if verb not in _PARQUET_READ:
        e.add("exec", f"parquet-tools {verb or ''} is not a command that only prints")


# ---------------------------------------------------------------- notebooks


def _jupyter(e: Effect, args: list[Word]) -> None:
    """``jupyter nbconvert --to script --stdout NB`` prints a notebook converted; without
    ``--stdout`` it writes a file, ``--inplace`` rewrites the notebook and ``--execute`` runs
    its cells. ``kernelspec list`` and ``--paths`` print what is installed; other jupyter
    commands start servers or kernels."""
    words = [w.value or "" for w in args]
    if words in (["kernelspec", "list"], ["kernelspec", "list", "--json"], ["--paths"],
                 ["--version"], ["--runtime-dir"], ["--data-dir"], ["--config-dir"]):
        return  # what is installed and where: printed
    if words[:1] != ["nbconvert"]:
        e.add("exec", f"jupyter {words[0] if words else ''} runs kernels or servers".strip())
        return
    notebooks = [w for w in args[1:] if (w.value or "").endswith(".ipynb")]
    flags = {w.split("=")[0] for w in words[1:] if w.startswith("-")}
    if "--execute" in flags:
        e.add("exec", "jupyter nbconvert --execute runs the notebook's cells")
    e.loads_here.append(Loads(("jupyter_nbconvert_config.py", "jupyter_config.py")))
    if "--stdout" in flags and "--inplace" not in flags:
        e.reads.extend(notebooks)
    else:
        e.writes.extend(notebooks)
        e.add("write", "jupyter nbconvert writes the converted notebook")


def _nbstripout(e: Effect, args: list[Word]) -> None:
    """``nbstripout -t NB`` (``--textconv``) and ``--dry-run`` print; ``--install`` makes
    git run nbstripout as a filter; otherwise it strips the notebooks in place."""
    o = parse_opts(args, "")
    if o.has("--install", "--uninstall"):
        e.add("write", "nbstripout --install sets a filter git runs")
    elif o.has("-t", "--textconv", "--dry-run", "--verify"):
        e.reads.extend(o.positionals)
    else:
        e.writes.extend(o.positionals)
        e.add("write", "nbstripout strips the notebooks in place")


RULES: dict[str, Rule] = {
    **dict.fromkeys(_CSVKIT_READERS, reader()), "jupyter": _jupyter, "nbstripout": _nbstripout,
    "csvsql": _csvsql, "mlr": _mlr, "xsv": _xsv, "qsv": _xsv, "parquet-tools": _parquet_tools,
}
