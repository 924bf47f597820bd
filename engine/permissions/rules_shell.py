"""Rules for shell built-ins and for programs that run other commands or shell code."""

from __future__ import annotations

import re
import shlex
import sys

from engine.permissions import programs as p
from engine.permissions.constructs import hash_mapping
from engine.permissions.effect import (
    Effect,
    Loads,
    Opts,
    Rule,
    is_dangerous_variable,
    parse_opts,
    plain,
    prog,
    program_name,
    teardown_verb,
)
from engine.permissions.inline import inline_code
from engine.permissions.listings import listed_dirs
from engine.permissions.rules_network import pip_command
from engine.permissions.shell_paths import NULL_DEVICES, stream_descriptor
from engine.permissions.words import INPUT_CODE, STDIN_FILES, Word, code_of, with_input

# ---------------------------------------------------------------- shell built-ins and code runners


def _cd(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "")
    target = o.positionals[0] if o.positionals else Word(None, "$HOME", "var")
    if target.value == "-":
        target = Word(None, "$OLDPWD", "var")
    e.chdir.append(target)


def _pushd(e: Effect, args: list[Word]) -> None:
    """``pushd DIR``; with no folder or ``+N``/``-N`` it rotates the stack (unknown here)."""
    o = parse_opts(args, "")
    folder = o.positionals[0] if o.positionals else None
    if folder is None or re.fullmatch(r"[+-]\d+", folder.value or ""):
        e.chdir.append(Word(None, "pushd " + " ".join(a.text for a in args), "other"))
    else:
        e.chdir.append(folder)


def _popd(e: Effect, args: list[Word]) -> None:
    """Bare ``popd`` returns to the folder the last ``pushd`` left (``+N``: unknown)."""
    e.chdir.append(Word(None, "popd" if not args else "popd " + args[0].text, "other"))


def _eval(e: Effect, args: list[Word]) -> None:
    if not args:
        return
    if all(a.value is not None for a in args):
        e.scripts.append(("eval", Word(" ".join(a.value or "" for a in args),
                                       " ".join(a.text for a in args))))
    else:
        e.scripts.append(("eval", _first_dynamic(args)))


def _first_dynamic(args: list[Word]) -> Word:
    for a in args:
        if a.dynamic == "subst":
            return a
    return next((a for a in args if a.value is None), args[0])


def _source(e: Effect, args: list[Word]) -> None:
    if args and args[0].value in STDIN_FILES:
        e.stdin_code = "shell"  # a here-doc or here-string: judged like bash -c
        return
    e.add("exec", f"{prog(e)} runs a shell script in this shell")
    if args:
        if args[0].dynamic == "subst":
            e.scripts.append((prog(e), args[0]))
        else:
            e.reads.append(args[0])


def _trap(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "", stop_at_positional=True)
    if o.has("-l", "-p") or len(o.positionals) < 2:
        return
    code = o.positionals[0]
    if code.value not in ("", "-"):
        e.scripts.append(("trap", code))


def _watch(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "nd", frozenset({"--interval", "--differences"}), stop_at_positional=True)
    if o.positionals:
        e.scripts.append(("watch", _joined(o.positionals)))


def _joined(words: list[Word]) -> Word:
    if all(w.value is not None for w in words):
        return Word.of(" ".join(w.value or "" for w in words))
    return _first_dynamic(words)


def _su(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "cgGs", frozenset({"--command", "--group", "--shell"}))
    e.add("exec", "su runs commands as another user")
    code = o.get("-c", "--command")
    if code is not None:
        e.scripts.append(("su -c", code))


def _runuser(e: Effect, args: list[Word]) -> None:
    """``runuser -u USER [--] CMD`` runs CMD; ``runuser [-l] USER [-c CODE]`` is ``su``."""
    longs = frozenset({"--user", "--group", "--supp-group", "--command", "--shell",
                       "--whitelist-environment"})
    o = parse_opts(args, "ugGcsw", longs, stop_at_positional=True)
    e.add("exec", "runuser runs commands as another user")
    if not o.has("-u", "--user"):
        _su(e, args)
    elif o.positionals:
        e.nested.append(("runuser", o.positionals))
    else:
        e.add("exec", "runuser without a command starts a shell")


def _alias(e: Effect, args: list[Word]) -> None:
    """``alias ls='rm -rf .'``: the value is shell code the name runs on later lines (of
    this command only: ``run_shell``'s bash ends with it)."""
    for a in args:
        if a.value is None:
            e.add("exec", "alias defines a command")
            e.scripts.append(("alias", a))
        elif "=" in a.value and not a.value.startswith("-"):
            name, _, code = a.value.partition("=")  # shown: judged here and at each call;
            e.defines.append((name, Word.of(code)))  # it lasts as long as this command
            e.scripts.append((f"alias {name}", Word.of(code)))


def _date(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "dfrs", frozenset({"--date", "--file", "--reference", "--set"}))
    if o.has("-s", "--set") or any(w.value and not w.value.startswith("+") for w in o.positionals):
        e.add("exec", "date sets the system clock")
    for w in o.all("-f", "--file", "-r", "--reference"):
        e.reads.append(w)


def _hostname(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "F", frozenset({"--file"}))
    if o.positionals or o.has("-F", "--file"):
        e.add("exec", "hostname sets the host name")


def _shell(e: Effect, args: list[Word]) -> None:
    name = prog(e)
    if program_name(e.argv[0]) == "busybox" and args:
        if args[0].value not in ("sh", "ash", "bash", "hush"):
            e.nested.append(("busybox", args))
            return
        args = args[1:]
    o = parse_opts(args, "oO", frozenset({"--rcfile", "--init-file"}), stop_at_positional=True)
    groups = [k[1:] for k in o.flags if k.startswith("-") and not k.startswith("--")]
    if any("n" in g for g in groups) and not any("i" in g for g in groups):
        e.reads.extend(o.positionals[:0 if o.has("-c") else 1])  # sh -n FILE: parsed, never
        return  # run (interactive shells ignore -n)
    for rc in o.all("--rcfile", "--init-file"):  # run first, like source FILE
        e.add("exec", f"{name} runs the start-up file {rc.shown}")
        if rc.dynamic == "subst":
            e.scripts.append((f"{name} --rcfile", rc))
        else:
            e.reads.append(rc)
    if o.has("-c"):
        if not o.positionals:
            e.at_least("ask", f"{name} -c without code")
            return
        e.scripts.append((f"{name} -c", o.positionals[0]))
        e.code_args = o.positionals[1:]
        return
    if o.positionals and not o.has("-s") and o.positionals[0].value not in STDIN_FILES:
        e.add("exec", f"{name} runs the script {o.positionals[0].shown}")
        e.reads.append(o.positionals[0])
        if o.positionals[0].dynamic == "subst":
            e.scripts.append((name, o.positionals[0]))
        return
    e.stdin_code = "shell"  # judged by the walker from what its input is
    if o.has("-s"):  # bash -s -- ARGS <<'EOF': the code sees ARGS as $1..
        e.code_args = [Word.of(name), *o.positionals]


_PRINTING_MODULES = {"json.tool": 1, "tokenize": 1, "base64": 1, "calendar": 0,
                     "platform": 0, "this": 0, "sysconfig": 0, "dis": 1, "ast": 1,
                     "tabnanny": 10_000, "mimetypes": 0, "site": 0,
                     "pyclbr": 10_000}
"""Standard modules that only read the files they are given and print (name -> how many of
their positionals are files read; the next one, json.tool's OUTFILE, is written; 0: their
positionals are no files)."""


_MODULE_VALUES = {"json.tool": frozenset({"--indent"})}
"""Options of a printing module that take a value (``json.tool --indent 1 f``: 1 is no
file)."""


_ARCHIVE_MODULES = {"zipfile": frozenset({"-l", "--list", "-t", "--test"}),
                    "tarfile": frozenset({"-l", "--list", "-t", "--test"})}
"""Standard archive modules and their options that only list or test (``-e`` extracts and
``-c`` creates: the module runs as unknown, asked)."""


_IMPORT_RUNS = frozenset({"antigravity", "this", "__hello__", "__phello__", "idlelib", "test",
                          "turtledemo"})
"""Standard packages whose import does something (opens a browser, runs a suite, starts an
editor); any ``__main__`` module runs its program when imported too."""


def _inspected(after: list[Word]) -> bool:
    """``python -m inspect [-d] MODULE[:NAME]``: it imports MODULE and prints its source or
    details, which only reads when MODULE is a standard one whose import does nothing."""
    words = [w.value for w in after]
    if words[:1] == ["-d"] or words[:1] == ["--details"]:
        words = words[1:]
    if len(words) != 1 or words[0] is None:
        return False
    parts = words[0].partition(":")[0].split(".")
    return parts[0] in sys.stdlib_module_names and parts[0] not in _IMPORT_RUNS and \
        not any(p.startswith("__") or not p.isidentifier() for p in parts)


def _module(e: Effect, name: str, module: Word, args: list[Word], o: Opts) -> None:
    """``python -m MODULE``: pip and venv by their own rules, standard modules that only
    list or print read (from the working directory first: ``imports_here``), the rest runs."""
    after = args[args.index(module) + 1:] if module in args else []  # the module's words
    here = "" if _isolated(o.flags) else module.value or "?"  # what a file here can stand in
    if module.value == "pip":  # python -m pip --version: pip's own words, after the module
        pip_command(e, after)
        e.imports_here = here
    elif module.value == "venv":
        _venv(e, after)
    elif module.value in _ARCHIVE_MODULES and after and \
            after[0].value in _ARCHIVE_MODULES[module.value]:
        e.reads.extend(after[1:])  # python -m zipfile -l app.whl: a listing
        e.imports_here = here
    elif module.value in _WRITING_MODULES:
        _writing_module(e, name, module.value, after)
    elif module.value == "inspect" and _inspected(after):
        e.imports_here = here  # python -m inspect -d json:dumps
    elif module.value == "http.server":
        _http_server(e, name, after)
        e.imports_here = here  # --help too: email.py, copy.py here stand in for its imports
    elif module.value == "keyring" and [w.value for w in after[:1]] == ["get"]:
        e.add("exec", f"{name} -m keyring runs a module")
        e.secret = f"{name} -m keyring get prints a stored password or token"
    elif module.value == "pydoc" and after and all(_inspected([w]) for w in after):
        e.imports_here = here  # python -m pydoc subprocess.run: a standard module's text
    elif module.value in _PRINTING_MODULES:
        limit = _PRINTING_MODULES[module.value]  # json.tool [INFILE [OUTFILE]], tokenize FILE
        files = parse_opts(after, "", _MODULE_VALUES.get(module.value, frozenset())
                           ).positionals if limit else []  # calendar 2026: no file
        e.reads.extend(files[:limit])
        e.writes.extend(files[limit:])
        e.imports_here = here
        if files[limit:]:
            e.add("write", f"{name} -m {module.value} writes its output file")
    else:
        e.add("exec", f"{name} -m {module.shown} runs a module")


_WRITING_MODULES = {
    "timeit": ("nrsu", ("-s", "--setup", "STATEMENT")), "zipfile": ("c", ("-c", "--create")),
    "tarfile": ("c", ("-c", "--create")), "cProfile": ("os", ("-o",)),
    "profile": ("os", ("-o",)), "zipapp": ("opm", ("-o", "--output")),
}
"""Standard modules that run code their words show (``timeit``'s statements and ``-s``
setup) or write a file an option names (``zipfile -c OUT``, ``cProfile -o OUT``): each
judged as that code or that write, besides running the module."""


def _writing_module(e: Effect, name: str, module: str, args: list[Word]) -> None:
    letters, named = _WRITING_MODULES[module]
    o = parse_opts(args, letters, frozenset(n for n in named if n.startswith("--")),
                   stop_at_positional=module in ("cProfile", "profile"))
    e.add("exec", f"{name} -m {module} runs a module")
    if module == "timeit":  # python -m timeit -s SETUP STMT..: python code, as with -c
        for code in [*o.all("-s", "--setup"), *o.positionals]:
            inline_code(e, f"{name} -m timeit", "python", code)
            e.inline.append(code)
        return
    created = o.all(*(n for n in named if n.startswith("-")))  # zipfile -c OUT FILE..
    if module in ("zipfile", "tarfile"):
        e.reads.extend(o.positionals)
    for out in created:
        e.writes.append(out)
        e.replaces.append(out)
        e.add("write", f"{name} -m {module} writes {out.shown}")


def _http_server(e: Effect, name: str, args: list[Word]) -> None:
    """``python -m http.server``: every file under the folder it serves (``-d DIR``, else
    where it runs) is readable by whoever reaches the port, as if read here (``cd ~`` first
    serves someone's keys)."""
    o = parse_opts(args, "db", frozenset({"--directory", "--bind", "--protocol"}))
    if o.has("-h", "--help"):
        return  # its usage, printed
    e.add("network", f"{name} -m http.server serves files over the network")
    served = o.all("-d", "--directory") or [Word.of(".")]
    e.reads.extend(served)
    if any((w.value or "").rstrip("/") in ("", "/home", "/root") for w in served):
        e.reads.append(Word.of("~/"))  # -d /: the home folders under it are served too


def _venv(e: Effect, args: list[Word]) -> None:
    """``python -m venv DIR`` creates DIR; ``--clear`` first deletes what DIR holds."""
    dirs = [w for w in args if not (w.value or "-").startswith("-")]
    e.writes.extend(dirs)
    e.add("write", "python -m venv creates a virtual environment")
    if any(w.value == "--clear" for w in args):
        e.trees.extend(dirs)
        e.add("destructive", "python -m venv --clear deletes everything in the folder first")


_SYNTAX_CHECKS = {"node": {"--check", "-c"}, "nodejs": {"--check", "-c"},
                  "ruby": {"-c", "-wc", "-cw", "-w", "-W"}, "php": {"-l", "--syntax-check"}}
"""Interpreters' options that parse a script without running it (ruby's ``BEGIN`` blocks
and node's code run only when the script runs; ``php -l`` only lints)."""
_CHECKS = frozenset({"--check", "-c", "-wc", "-cw", "-l", "--syntax-check"})
"""Of those, the ones that make it a check (ruby's ``-w`` alone runs the script)."""
_ABOUT = {"php": frozenset({"-m", "--ini", "-i", "--info"})}
"""Options with which an interpreter prints about itself (its modules, its ini files,
``phpinfo()``), reading no code; ``--ri json`` (``--re``, ``--rc``, ``--rf``, ``--rz``)
describes one extension, class or function."""


def _syntax_check(name: str, args: list[Word]) -> bool:
    """``node --check FILE``, ``ruby -wc FILE``: one script, checked, nothing else given."""
    flags = [w.value for w in args if (w.value or "-").startswith("-")]
    files = [w for w in args if not (w.value or "-").startswith("-")]
    allowed = _SYNTAX_CHECKS.get(name, set())
    return bool(flags) and set(flags) <= allowed and bool(_CHECKS.intersection(flags)) \
        and len(files) == 1 and files[0].value is not None


def _about(name: str, args: list[Word]) -> bool:
    """``php -m``, ``php --ini``, ``php --ri json``, ``perl -V:version``: the interpreter
    prints about itself."""
    words = [w.value for w in args]
    if name == "perl" and words and all(re.fullmatch(r"-V(?::[\w.*]+)?", w or "")
                                         for w in words):
        return True  # perl -V, perl -V:version: the build's configuration, printed
    if name != "php" or None in words or not words:
        return False
    if len(words) == 2 and words[0] in ("--ri", "--re", "--rc", "--rf", "--rz"):
        return not (words[1] or "-").startswith("-")
    return len(words) == 1 and words[0] in _ABOUT[name]


_IMPORTS = re.compile(r"(?:^|[;\n]|\s)(?:import|from)\s+([A-Za-z_]\w*)")


def _imported_here(code: Word) -> list[Loads]:
    """``python -c 'import json'`` puts its working directory first on the import path: a
    ``json.py`` (or ``json/``) there is what runs. Only one this command wrote is asked;
    the project's own modules are the project's code, which ``-c`` asks for anyway."""
    names = sorted(set(_IMPORTS.findall(code.value or "")))
    files = tuple(f for n in names for f in (f"{n}.py", f"{n}/__init__.py"))
    return [Loads(files, runs=lambda _path: "")] if files else []


def _isolated(flags: dict[str, Word | None]) -> bool:
    """``-I`` or ``-P`` (also inside ``-IEs``-like groups): the working directory is not put
    on the import path."""
    return any(k.startswith("-") and not k.startswith("--") and set(k[1:]) & {"I", "P"}
               for k in flags)


_PERL_PRINTS = re.compile(r"\b(?:print|printf|say|syswrite|write)\b")
"""What perl code writes its output with (to the file ``-i`` edits)."""


def _empties_in_place(args: list[Word], code: list[Word]) -> bool:
    """``perl -ni -e '$n++' f``: the ``-n`` loop prints only what the code prints, and ``-i``
    (no backup suffix: nothing after the ``i``) writes that back over each file, so code that
    never prints empties them."""
    clusters = [w.value or "" for w in args if (w.value or "").startswith("-")
                and not (w.value or "").startswith("--") and w not in code]
    in_place = any(re.fullmatch(r"-[a-zA-Z0-9]*i", c) for c in clusters)
    loops = any(re.fullmatch(r"-[a-zA-DF-Z0-9]*n[a-zA-Z0-9]*", c) for c in clusters) and \
        not any("p" in c.split("e")[0].split("E")[0] for c in clusters)
    return in_place and loops and bool(code) and all(
        w.value is not None and not _PERL_PRINTS.search(w.value) for w in code)


def _interpreter(e: Effect, args: list[Word]) -> None:
    name = program_name(e.argv[0])
    o = parse_opts(args, p.INLINE_CODE.get(name, "c"), frozenset({"--eval", "--print"}),
                   stop_at_positional=True)
    version = ("--version", "-V", "--help", "-h", "--v8-options") + (
        () if name in ("python", "pypy") else ("-v",))
    if (len(args) == 1 and args[0].value in version) or _about(name, args):
        return
    module = o.get("-m") if name in ("python", "pypy") else None
    if module is not None:
        _module(e, name, module, args, o)
        return
    if _syntax_check(name, args):
        e.reads.extend(o.positionals)  # node --check FILE, ruby -wc FILE: parsed, never run
        return
    if name == "ruby" and _ruby_un(e, args):
        return
    if name == "perl":  # -M'x;system("rm -rf src")': code after the module's name
        for w in o.all("-M", "-m"):
            inline_code(e, "perl -M", name, w)
    code = [k for k in o.flags if k in p.CODE_OPTIONS]
    if code:
        _inline(e, name, args, o, code[0])
        return
    if name == "deno" and len(o.positionals) > 1 and o.positionals[0].value == "eval":
        e.add("exec", "deno eval runs inline code")
        inline_code(e, "deno eval", name, o.positionals[1])
        e.inline.append(o.positionals[1])
        return
    if o.positionals and o.positionals[0].value not in STDIN_FILES:
        e.add("exec", f"{name} runs the script {o.positionals[0].shown}")
        if o.positionals[0].dynamic == "subst":
            e.at_least("deny", f"{name} runs a script produced at run time")
        task = args[args.index(o.positionals[0]) + 1:]
        verb = teardown_verb(task, positionals=3)  # manage.py flush, cli.py db drop
        if verb is not None:
            e.add("destructive", f"{name} {o.positionals[0].shown} {verb} asks a project "
                                 "script to tear something down")
        return
    e.add("exec", f"{name} runs the code it reads from its input")
    e.stdin_code = "interpreter"


_UN_COMMANDS = frozenset({"cp", "ln", "mv", "rm", "mkdir", "rmdir", "install", "chmod",
                          "touch"})
"""What ruby's ``un`` library does as the command of the same name (``ruby -run -e rm --
-rf src`` is ``rm -rf src``)."""


def _ruby_un(e: Effect, args: list[Word]) -> bool:
    """``ruby -run -e CMD ARGS``: a file command judged as that command, or ``httpd DIR``
    serving DIR (each file under it readable from the network); False for any other use."""
    words = [w.value for w in args[:3]]
    if len(args) < 3 or words[:2] != ["-run", "-e"] or words[2] not in (*_UN_COMMANDS, "httpd"):
        return False
    rest = [w for w in args[3:] if w.value != "--"]
    if words[2] == "httpd":
        e.add("network", "ruby -run -e httpd serves files over the network")
        opts = parse_opts(rest, "pb", frozenset({"--port", "--bind-address", "--max-clients",
                                                 "--temp-dir", "--request-timeout"}))
        e.reads.extend(opts.positionals[:1] or [Word.of(".")])
    else:
        e.nested.append((f"ruby -run -e {words[2]}", [Word.of(words[2] or ""), *rest]))
    return True


def inline_input(e: Effect, code: Word) -> None:
    """``python3 - <<'EOF'``, ``node <<< 'CODE'``: code the command line shows, read on
    standard input, judged like the same code given with ``-c``/``-e``."""
    name = program_name(e.argv[0])
    o = parse_opts(e.argv[1:], p.INLINE_CODE.get(name, "c"), frozenset({"--eval", "--print"}),
                   stop_at_positional=True)
    e.add("exec", f"{name} runs the code it reads from its input")
    inline_code(e, f"{name} <<", name, code)
    e.inline.append(code)
    if name in ("python", "pypy") and not _isolated(o.flags):
        e.loads_here.extend(_imported_here(code))


def _inline(e: Effect, name: str, args: list[Word], o: Opts, option: str) -> None:
    """``python -c CODE``, ``perl -ne CODE FILE``: the code is judged by ``inline_code``;
    the files a ``-n``/``-p`` loop reads, a ``-i`` that empties them, the modules imported
    from the working directory, and code produced at run time."""
    codes = o.all(*(k for k in o.flags if k in p.CODE_OPTIONS))
    e.add("exec", f"{name} {option} runs inline code")
    for w in codes:
        inline_code(e, f"{name} {option}", name, w)
        e.inline.append(w)
        if name in ("python", "pypy") and not _isolated(o.flags):
            e.loads_here.extend(_imported_here(w))
    if name in ("perl", "ruby") and any(
            k.startswith("-") and not k.startswith("--") and set(k[1:]) & {"n", "p"}
            for k in o.flags):  # -n/-p loop over the files named: they are read
        e.reads.extend(w for w in o.positionals if w.value is None or w.value != "-")
    if name == "perl" and _empties_in_place(args, codes):
        e.writes.extend(o.positionals)
        e.add("destructive", "perl -n -i prints nothing: each file it edits is emptied")
    if any(w.dynamic == "subst" for w in codes):
        e.at_least("deny", f"{name} {option} runs code produced at run time (a download or "
                           "a decoder)")


# ---------------------------------------------------------------- commands that run commands


def _xargs_opts(args: list[Word]) -> Opts:
    return parse_opts(args, "adEILnPs", frozenset({
        "--arg-file", "--delimiter", "--max-lines", "--max-args", "--max-procs",
        "--max-chars", "--process-slot-var"}), stop_at_positional=True)


_NAME_MATCHERS = frozenset({"grep", "egrep", "fgrep", "rg"})


def xargs_prints_names(args: list[Word]) -> bool:
    """``xargs grep -l PAT``, ``xargs -0 rg -l PAT``: each line printed is one of the names
    xargs read (those whose files match), as read. Not with ``-I`` (the names go where
    ``{}`` is), file operands of grep's own, or options that print anything else."""
    o = _xargs_opts(args)
    inner = o.positionals
    if o.has("-I", "-i", "--replace") or not inner or \
            inner[0].value not in _NAME_MATCHERS or any(w.value is None for w in inner):
        return False
    g = parse_opts(inner[1:], "efmABCgtT", frozenset({"--regexp", "--file", "--glob",
                                                      "--type", "--max-count"}))
    listed = g.has("-l", "--files-with-matches", "-L", "--files-without-match")
    pattern = 0 if g.has("-e", "--regexp", "-f", "--file") else 1
    extra = set(g.flags) - {"-l", "--files-with-matches", "-L", "--files-without-match", "-e",
                            "--regexp", "-i", "--ignore-case", "-w", "-x", "-E", "-F",
                            "-P", "-s", "--no-messages", "-I", "-m", "--max-count"}
    return listed and not extra and len(g.positionals) == pattern


def xargs_splits_at_nul(args: list[Word]) -> bool:
    """``xargs -0``, ``--null``, ``-d '\\0'``: each item it reads ends at NUL only, so a
    name with a blank stays one argument."""
    return input_arguments(_xargs_opts(args)).endswith(" split at 0>")


def _xargs(e: Effect, args: list[Word]) -> None:
    o = _xargs_opts(args)
    e.reads.extend(o.all("-a", "--arg-file"))
    inner = o.positionals or [Word.of("echo")]
    marker = _replace_string(o)
    if marker:
        e.nested.append(("xargs", [with_input(w, marker) for w in inner]))
    else:  # several words each time (two stand for them: uniq IN OUT), or one with -n 1
        fed = Word(None, input_arguments(o), "other")
        e.nested.append(("xargs", [*inner, fed] if _one_at_a_time(o) else [*inner, fed, fed]))


def _one_at_a_time(o: Opts) -> bool:
    """``xargs -n 1``, ``-L 1``, ``-l``: one input item (or line) per command."""
    return o.has("-l") or any((w.value or "") == "1" for w in o.all(
        "-n", "--max-args", "-L", "--max-lines"))


INPUT_ARGUMENTS = "<arguments from input>"
"""The word ``xargs`` fills with what it reads, split at blanks with quotes honoured; with
``-0`` or ``-d C``, ``<arguments from input split at N>`` splits at the character of code N
only (quotes are not special, a trailing newline stays in the last word), and ``.. at ?>``
where that character is only known at run time."""
_DELIMITER_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\0": "\0"}


def input_arguments(o: Opts) -> str:
    """The ``INPUT_ARGUMENTS`` word for ``xargs`` options ``o``."""
    delimiter = o.all("-d", "--delimiter")
    if delimiter:
        raw = delimiter[-1].value
        c = _DELIMITER_ESCAPES.get(raw, raw) if raw is not None else None
        return f"{INPUT_ARGUMENTS[:-1]} split at {ord(c) if c and len(c) == 1 else '?'}>"
    if o.has("-0", "--null"):
        return f"{INPUT_ARGUMENTS[:-1]} split at 0>"
    return INPUT_ARGUMENTS


def is_input_arguments(text: str) -> bool:
    """True for a word ``input_arguments`` made, whatever its separator."""
    return text.startswith(INPUT_ARGUMENTS[:-1])


def split_input(marker: str, text: str) -> list[str] | None:
    """The words ``xargs`` makes of ``text`` for the ``marker`` word ``input_arguments`` made;
    None when only known at run time (a separator given by a variable, unbalanced quotes)."""
    split = _SPLIT_AT.fullmatch(marker)
    if split is None:
        try:
            return shlex.split(text)
        except ValueError:
            return None
    if split.group(1) == "?":
        return None
    words = text.split(chr(int(split.group(1))))
    return words[:-1] if words and words[-1] == "" else words


_SPLIT_AT = re.compile(re.escape(INPUT_ARGUMENTS[:-1]) + r" split at (\d+|\?)>")


def _replace_string(o: Opts) -> str:
    """``xargs -I R``, ``-iR``/``-i`` and ``--replace[=R]`` (``{}`` by default)."""
    for name, value in reversed(o.items):
        if name == "-I" and value is not None:
            return value.value or "{}"
        if name in ("-i", "--replace"):
            return (value.value if value is not None else None) or "{}"
    return ""


FIND_VALUE_TESTS = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-type", "-xtype", "-user", "-group", "-uid", "-gid", "-perm", "-size", "-mtime", "-mmin",
    "-atime", "-amin", "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-maxdepth",
    "-mindepth", "-links", "-inum", "-samefile", "-used", "-fstype", "-printf", "-context",
    "-regextype", "-lname", "-ilname", "-D", "-O", "-newermt", "-newerct", "-newerat",
})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
FIND_WRITE = frozenset({"-fprint", "-fprint0", "-fls", "-fprintf"})


def _sets_variables(e: Effect, args: list[Word]) -> None:
    """``printf -v VAR``, ``read VAR``: setting PATH and friends changes what runs next."""
    o = parse_opts(args, {"read": "vdnNptu", "mapfile": "dnOsuCc",
                          "readarray": "dnOsuCc"}.get(prog(e), "v"))
    names = o.all("-v") + (o.positionals if prog(e) in ("read", "mapfile", "readarray") else [])
    for w in names:
        if w.value is None or is_dangerous_variable(w.value.split("[")[0]):
            e.add("exec", f"{prog(e)} sets {w.shown}, which changes what programs run")


def _hash(e: Effect, args: list[Word]) -> None:
    """``hash -p FILE NAME``: when FILE is a system program the walker follows NAME to it
    (``hash_mapping``: a later NAME is judged as FILE); any other file is asked here."""
    if parse_opts(args, "pt").has("-p") and hash_mapping([a.value for a in args]) is None:
        e.add("exec", "hash -p chooses which file a command name runs")


def _man(e: Effect, args: list[Word]) -> None:
    # -H[BROWSER] / --html[=BROWSER]: the browser only attached; alone, $BROWSER runs
    browsers = [a for a in args if (a.value or "").startswith(("-H", "--html"))]
    args = [a for a in args if a not in browsers]
    for a in browsers:
        v = a.value or ""
        browser = v[2:] if v.startswith("-H") else v.partition("=")[2]
        if browser:
            e.scripts.append(("man -H", Word.of(browser)))
        else:
            e.add("exec", "man -H opens the page in the program $BROWSER names")
    o = parse_opts(args, "PCMmSpel", frozenset({"--pager", "--config-file", "--manpath",
                                                 "--sections", "--preprocessor"}))
    if o.has("-p", "--preprocessor", "-C", "--config-file"):
        e.add("exec", "man option runs a program")
    for code in o.all("-P", "--pager"):  # a command line: judged as one
        e.scripts.append(("man -P", code))
    if o.has("-l", "--local-file"):
        e.reads.extend(o.positionals)
    else:  # a page name with a slash is a file man reads
        e.reads.extend(w for w in o.positionals if w.value is None or "/" in w.value)


def _find(e: Effect, args: list[Word]) -> None:
    i, n = 0, len(args)
    while i < n and args[i].value in ("-H", "-L", "-P"):
        if args[i].value == "-L":
            e.at_least("ask", "find -L follows symbolic links out of the tree")
        i += 1
    starts: list[Word] = []
    while i < n and not (args[i].value or "").startswith(("-", "(", "!")):
        starts.append(args[i])
        i += 1
    e.reads.extend(starts or [Word.of(".")])
    while i < n:
        v = args[i].value
        i += 1
        if v is None:
            continue
        if v in FIND_VALUE_TESTS or v.startswith("-newer"):
            i += 1
        elif v in FIND_EXEC:
            j = i
            while j < n and args[j].value not in (";", "+"):
                j += 1
            several = j < n and args[j].value == "+"  # -exec CMD {} +: many files at once
            _find_exec(e, v, [w for w in args[i:j] for w in ([w, w] if several and w.value
                                                              == "{}" else [w])], starts)
            i = j + 1
        elif v in FIND_WRITE:
            if i < n and stream_descriptor(args[i].value) is not None:
                e.writes.append(args[i])  # -fprint /dev/fd/3: what 3 holds, judged at the end
            elif i < n and args[i].value not in NULL_DEVICES:
                e.writes.append(args[i])
                e.replaces.append(args[i])
                e.add("write", f"find {v} writes a file")
            i += 2 if v == "-fprintf" else 1
        elif v == "-delete":
            e.add("destructive", "find -delete deletes every match")
        elif v in ("-follow",):
            e.at_least("ask", "find -follow follows symbolic links out of the tree")
        elif v == "-files0-from" and i < n:
            e.reads.append(args[i])
            i += 1


def _find_exec(e: Effect, how: str, words: list[Word], starts: list[Word]) -> None:
    """``find START -exec CMD {} ;``: CMD runs on every file under each start; with
    ``-execdir`` in the folder of each (``execdir_start``). ``{}`` as CMD runs each file found
    as a program: which one is only known at run time."""
    if words and (words[0].value is None or "{}" in words[0].value):
        why = f"find {how} runs each file it finds as the program"
        e.add("exec", why)
        e.unseen = e.unseen or why
    for start in (starts or [Word.of(".")])[:4]:
        cmd = [_found(w, start) for w in words]
        if cmd and program_name(cmd[0]) in ("chmod", "chown", "chgrp"):
            cmd.insert(1, Word.of("-R"))  # applied to every file under the start
        if how in ("-execdir", "-okdir"):
            e.nested_under.append((f"find {how}", cmd, start))
        else:
            e.nested.append((f"find {how}", cmd))


def _found(w: Word, start: Word) -> Word:
    """``{}`` in ``find -exec`` stands for a file under the starting point.

    Alone it is the starting point (a path judged like it); inside a longer word (shell code
    for ``sh -c``) it is text known only at run time (a file name can be code), never nothing.
    """
    if w.value is None or "{}" not in w.value:
        return w
    if start.value is None or w.value != "{}":
        return with_input(w, "{}")
    return Word(start.value, w.text)


def _fd(e: Effect, args: list[Word]) -> None:
    cut = next((k for k, a in enumerate(args) if a.value in ("-x", "--exec", "-X",
                                                              "--exec-batch")), len(args))
    o = parse_opts(args[:cut], "edtESjcoC", frozenset({
        "--extension", "--max-depth", "--min-depth", "--type", "--exclude", "--size",
        "--threads", "--color", "--owner", "--changed-within", "--changed-before",
        "--base-directory", "--search-path", "--ignore-file", "--max-results", "--format",
        "--path-separator", "--and"}))
    e.reads.extend(o.positionals[1:])
    e.reads.extend(o.all("--base-directory", "--search-path", "--ignore-file"))
    if cut < len(args):
        rest = args[cut + 1:]
        end = next((k for k, a in enumerate(rest) if a.value == ";"), len(rest))
        dirs = listed_dirs([e.argv[0], *args[:cut]]) or []
        e.nested.append((f"fd {args[cut].value}",
                         _with_placeholders(rest[:end], _FD_SLOTS, dirs)))


_FD_SLOTS = re.compile(r"\{(?:/|//|\.|/\.)?\}")
_PARALLEL_SLOTS = re.compile(r"\{(?:\d+|/|//|\.|/\.|#|%|\d*[/.]+)?\}")


def _with_placeholders(words: list[Word], slots: re.Pattern[str],
                       dirs: list[str] | None = None) -> list[Word]:
    """Replace strings (``{}``, ``{.}``...) become data known at run time (or a path under
    ``dirs`` when the input lists paths there); with none, the input is appended."""
    found_path = f"{dirs[0].rstrip('/') or '.'}/found" if dirs and len(dirs) == 1 else None
    out: list[Word] = []
    found = False
    for w in words:
        if w.value is not None and slots.search(w.value):
            found = True
            if found_path is not None and slots.fullmatch(w.value):
                out.append(Word(found_path, w.text))
                continue
            marked = slots.sub("\x00", w.value)
            out.append(with_input(Word(marked, w.text), "\x00"))
        else:
            out.append(w)
    if not found:
        out.append(Word.of(found_path) if found_path is not None
                   else Word(None, "<argument from input>", "other"))
    return out


def _crontab(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "u", frozenset())
    if o.has("-r"):
        e.add("destructive", "crontab -r deletes every scheduled job")
    elif o.has("-l"):  # the user's table, kept outside the workspace
        e.reads.append(Word.of("/var/spool/cron/crontabs"))
    else:
        e.add("exec", "crontab schedules commands")
        e.at_least("deny", "crontab installs commands that run later, unseen")


_SYSTEM_EDITS = {"visudo": "/etc/sudoers", "vipw": "/etc/passwd", "vigr": "/etc/group"}
"""Programs that open a system file in an editor and install what it saves."""


def _system_edit(e: Effect, args: list[Word]) -> None:
    """``visudo``, ``vipw``, ``vigr``: the system file they install is written (``visudo
    -c`` only checks it, ``-f FILE`` names another); ``sudoedit FILE``: each FILE."""
    name = prog(e)
    if name == "sudoedit":
        e.writes.extend(w for w in args if not (w.value or "-").startswith("-"))
        e.add("write", "sudoedit edits the files it names, as root")
        return
    o = parse_opts(args, "f", frozenset({"--file"}))
    target = [*o.all("-f", "--file")] or [Word.of(_SYSTEM_EDITS[name])]
    if name == "visudo" and o.has("-c", "--check"):
        e.reads.extend(target)
        return
    e.writes.extend(target)
    e.add("write", f"{name} edits {target[0].shown} and installs it")


def _at(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "qfmMtc", frozenset())
    if o.has("-l", "-c") or (prog(e) == "at" and o.has("-d", "-r")):
        e.add("exec" if o.has("-d", "-r") else "read", "")
        return
    e.add("exec", f"{prog(e)} schedules commands")
    e.at_least("deny", f"{prog(e)} installs commands that run later, unseen")


_ALL_PIDS = frozenset({"-1", "1"})


def _kill(e: Effect, args: list[Word]) -> None:
    """``kill -9 -1`` signals every process the user owns; pid 1 is init."""
    vals = [a.value for a in args]
    if any(v in ("-l", "-L", "--list", "--table") for v in vals) or vals[:1] == ["-0"] or (
            vals[:2] in (["-s", "0"], ["-n", "0"])):
        return  # lists the signals; -0 (signal 0) only tests that the processes exist
    e.add("exec", "kill stops processes")
    pids: list[str | None] = []
    signal = False
    i = 0
    while i < len(vals):
        v = vals[i]
        if v == "--":
            pids.extend(vals[i + 1:])
            break
        if v in ("-s", "-n"):
            signal, i = True, i + 2
            continue
        if v is not None and v.startswith("-") and not signal and not pids:
            signal = True
        else:
            pids.append(v)
        i += 1
    if not pids and vals == ["-1"]:
        pids = ["-1"]
    if any(p in _ALL_PIDS for p in pids):
        e.add("destructive", "kill signals every process (pid -1) or init (pid 1)")
    elif any(p is None for p in pids):
        e.at_least("ask", "kill of a process only known at run time")


_PROCESS_NAMES = ("bash", "sshd", "python3", "systemd", "init", "a", "node")


def _pkill(e: Effect, args: list[Word]) -> None:
    """``pkill``/``killall`` with a pattern every process matches, or only user selectors."""
    name = prog(e)
    e.add("exec", f"{name} stops processes")
    values = "dgGPstuUFn" if name == "pkill" else "usSo"
    o = parse_opts(args, values, frozenset({"--signal", "--user", "--group", "--parent",
                                            "--session", "--terminal", "--euid", "--uid",
                                            "--pidfile", "--older-than", "--younger-than"}))
    patterns = [w.value for w in o.positionals]
    if any(p is None for p in patterns):
        e.at_least("ask", f"{name} pattern only known at run time")
        return
    regex = name == "pkill" or o.has("-r", "--regexp")
    if not patterns or any(_matches_everything(p or "", regex) for p in patterns):
        e.add("destructive", f"{name} signals every process it can see")


def _matches_everything(pattern: str, regex: bool) -> bool:
    if not regex:
        return pattern in ("", "*")
    try:
        rx = re.compile(pattern)
    except re.error:
        return True
    return all(rx.search(n) for n in _PROCESS_NAMES)


def _parallel(e: Effect, args: list[Word]) -> None:
    """GNU parallel runs its command words (or each input, with none) as shell code."""
    o = parse_opts(args, "jSadINnLPEkCeXm", frozenset({
        "--jobs", "--sshlogin", "--arg-file", "--delimiter", "--max-args", "--max-lines",
        "--joblog", "--results", "--tmpdir", "--colsep", "--timeout", "--delay", "--env",
        "--workdir", "--basefile", "--return", "--transfer", "--halt", "--memfree",
        "--load", "--retries", "--sshloginfile", "--tag-string", "--replace"}),
        stop_at_positional=True)
    if o.has("--dry-run", "--dryrun"):
        return  # prints the commands it would run, runs none
    if o.has("-S", "--sshlogin", "--sshloginfile"):
        e.add("network", "parallel runs jobs on other machines")
    words = o.positionals
    cut = next((i for i, w in enumerate(words) if (w.value or "").startswith(":::")
                or (w.value or "").startswith("::::")), len(words))
    command, sources = words[:cut], words[cut:]
    if _parallel_listed(e, command, sources, o.has("-a", "--arg-file", "-I", "--replace")):
        return
    e.add("exec", "parallel runs commands")
    if command:
        marked = _with_placeholders(command, _PARALLEL_SLOTS)
        if marked[-1].text == "<argument from input>":
            marked = [*marked[:-1], Word(None, INPUT_CODE, "input")]
        e.scripts.append(("parallel", _joined_code(marked)))
        return
    listed = [w for w in sources if not (w.value or "").startswith(":::")]
    if sources and sources[0].value in (":::", ":::+"):
        for w in listed:
            e.scripts.append(("parallel :::", w))
    else:
        e.add("exec", "parallel runs the commands it reads")
        e.stdin_code = "shell"


def _parallel_listed(e: Effect, command: list[Word], sources: list[Word],
                     other_input: bool) -> bool:
    """``parallel wc -l ::: a b``: a command of known words and one ``:::`` list of known
    inputs runs that command once per input (appended, or put at ``{}``): each is judged."""
    inputs = sources[1:]
    if (other_input or not command or not sources or sources[0].value != ":::"
            or not inputs or len(inputs) > 64
            or any(w.value is None or w.value.startswith(":::") for w in inputs)
            or any(w.value is None for w in command)):
        return False
    words = [w.value or "" for w in command]
    for value in (w.value or "" for w in inputs):
        quoted = shlex.quote(value)
        filled = [_PARALLEL_SLOTS.sub(quoted, w) if _PARALLEL_SLOTS.search(w) else w
                  for w in words]
        line = " ".join(filled) if filled != words else " ".join([*words, quoted])
        e.scripts.append(("parallel :::", Word.of(line)))
    return True


def _joined_code(words: list[Word]) -> Word:
    parts = [code_of(w) for w in words]
    if any(p is None for p in parts):
        return _first_dynamic(words)
    return Word.of(" ".join(p for p in parts if p is not None))


def _completion(e: Effect, args: list[Word]) -> None:
    """``compgen -W WORDS``, ``complete -W WORDS``: each word is expanded like an argument
    (a ``$(..)`` in it runs), now or when the shell completes."""
    o = parse_opts(args, "oAGWXFCPS")
    for words in o.all("-W"):
        code = code_of(words)
        e.scripts.append((f"{prog(e)} -W", words if code is None else
                          Word.of(f"echo {code}")))


def _init(e: Effect, args: list[Word]) -> None:
    e.add("destructive" if any(a.value in ("0", "6") for a in args) else "exec",
          "init changes the run level")


RULES: dict[str, Rule] = {
    **dict.fromkeys(p.SHELLS, _shell),
    **dict.fromkeys(p.INTERPRETERS, _interpreter),
    "xargs": _xargs, "find": _find, "fd": _fd, "fdfind": _fd, "cd": _cd, "pushd": _pushd,
    "popd": _popd, "eval": _eval, "source": _source, ".": _source, "trap": _trap,
    "watch": _watch, "su": _su, "runuser": _runuser, "alias": _alias, "date": _date,
    "hostname": _hostname,
    "crontab": _crontab, "visudo": _system_edit, "vipw": _system_edit, "vigr": _system_edit,
    "sudoedit": _system_edit, "man": _man, "printf": _sets_variables, "read": _sets_variables,
    "mapfile": _sets_variables, "readarray": _sets_variables, "hash": _hash, "init": _init,
    "kill": _kill, "killall": _pkill, "pkill": _pkill,
    "killall5": plain("destructive", "killall5 signals every process"),
    "parallel": _parallel, "at": _at, "batch": _at, "compgen": _completion,
    "complete": _completion,
}
