"""Rules for database clients, containers, orchestration and infrastructure tools.

Destructive by subcommand and argument: SQL that drops, truncates or changes every row handed
to a client (argument, option or here-doc), ``docker ... prune``/``rm``, ``compose down -v``,
``kubectl delete``, ``helm uninstall``, ``terraform destroy``, ``pulumi destroy``, cloud
``delete``/``rm`` calls. What only lists or shows is a read; the rest asks.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from engine.permissions.effect import (
    Effect,
    Loads,
    Opts,
    Rule,
    abbreviates,
    parse_opts,
    prog,
    teardown_verb,
)
from engine.permissions.inline import inline_code
from engine.permissions.rules_network import fetched_name, uploads
from engine.permissions.small_files import small_file
from engine.permissions.sql import ATTACHES, DB_CHANGE, judge_sql
from engine.permissions.words import STDIN_FILES, Word

# ---------------------------------------------------------------- database clients


def apply_sql(e: Effect, how: str, text: Word, scratch: bool = False,
              readonly: bool = False) -> None:
    """Judge SQL (and client commands) a database client is given; on a ``scratch``
    (in-memory) database, changing its tables changes nothing that lasts; on a ``readonly``
    connection (``sqlite3 -readonly``) nothing changes and ``ATTACH`` only reads."""
    if text.value is None:
        e.at_least("ask", f"{how}: SQL only known at run time")
        e.unseen = e.unseen or f"{how}: SQL only known at run time"
        # DROP TABLE "$T", or <(echo 'DROP ..'): the statement is known, if not its quoting
        shown = re.sub(r"[\"']", "", text.text) if text.dynamic == "subst" else text.text
        loose = judge_sql(re.sub(r"^[\"']|[\"']$", "", shown))
        if loose.risk == "destructive":  # DROP TABLE "$T": the statement is known
            e.add("destructive", "; ".join(loose.reasons))
        return
    sql = judge_sql(text.value)
    ignored = {DB_CHANGE} if scratch or readonly else set()
    if readonly and None not in sql.attached:
        ignored.add(ATTACHES)
        e.reads.extend(Word.of(f) for f in sql.attached if f)
    elif not readonly:  # ATTACH 'f' AS n: f is opened for writing, made when missing
        e.writes.extend(Word.of(f) if f is not None else Word(None, "<attached database>",
                                                               "other") for f in sql.attached
                        if f is None or (f and not f.startswith((":memory:", "file::memory:"))))
    kept = [r for r in sql.reasons if r not in ignored]
    for reason in kept:
        e.add(sql.risk if "destroy" in reason or "every row" in reason else
              ("write" if sql.risk != "exec" else "exec"), reason)
    if kept or not (scratch or readonly) or sql.files:
        e.add(sql.risk, "")
    for code in sql.scripts:
        e.scripts.append((how, Word.of(code)))
    if sql.from_input:  # mysql -e 'source /dev/stdin' <<< SQL: the input is run as SQL
        e.stdin_reader = _sql_stdin(f"{how} (its input)")
    e.writes.extend(Word.of(f) for f in sql.files)
    e.replaces.extend(Word.of(f) for f in sql.files)
    e.reads.extend(Word.of(f) for f in sql.reads)


def _sql_stdin(how: str) -> Callable[[Effect, Word], None]:
    return lambda e, text: apply_sql(e, how, text)


def _sqlite_stdin(db: Word | None, scratch: bool = False,
                  readonly: bool = False) -> Callable[[Effect, Word], None]:
    """SQL on sqlite3's input: judged (on a ``scratch`` or ``readonly`` database as
    ``apply_sql`` says), and the database counts as written when it does more than read."""

    def judge(e: Effect, text: Word) -> None:
        apply_sql(e, "sqlite3 <<", text, scratch, readonly)
        if db is None:
            return
        if e.risk != "read":
            e.writes.append(db)

    return judge


_SQLITE_VALUES = frozenset({"-cmd", "-c", "-separator", "-nullvalue", "-newline", "-init", "-vfs",
                            "-lookaside", "-pagecache", "-mmap", "-maxsize", "-heap"})


def _sqlite_archive(e: Effect, args: list[Word]) -> bool:
    """``sqlite3 DB -Ax``: every word from ``-A`` on is an ``.archive`` command. ``t`` lists;
    ``x`` writes the archive's files over those here (content the command does not show);
    ``c``, ``u``, ``i``, ``r`` change the database. False when there is no ``-A``."""
    at = next((i for i, w in enumerate(args) if (w.value or "").startswith(
        ("-A", "--archive"))), None)
    first = args[at].value if at is not None else None
    if at is None or first is None:
        return False  # a word only known at run time is judged as SQL (asked) below
    words = [first[2:] if first.startswith("-A") else "", *(w.value for w in args[at + 1:])]
    if None in words:
        return _archive_unknown(e)
    letters = "".join(w.lstrip("-") for w in words if w and not w.startswith("--"))
    longs = " ".join(w for w in words if w and w.startswith("--"))
    if "x" in letters or "--extract" in longs:
        e.add("write", "sqlite3 -A x extracts the archive's files over the files here")
        e.unseen = "the files sqlite3 -A x writes, which the command line does not show"
    if set(letters) & set("cuir") or re.search(r"--(?:create|update|insert|remove)", longs):
        e.add("write", "sqlite3 -A changes the archive in the database")
    return True


def _archive_unknown(e: Effect) -> bool:
    e.add("write", "sqlite3 -A with words only known at run time may extract files")
    e.unseen = "what sqlite3 -A does with words only known at run time"
    return True


def _sqlite3(e: Effect, args: list[Word]) -> None:
    """``sqlite3 [-opt ...] DB [SQL ...]``; options are single-dash words (``-cmd SQL``)."""
    if _sqlite_archive(e, args):
        args = args[:next(i for i, w in enumerate(args) if (w.value or "").startswith(
            ("-A", "--archive")))]
    pos: list[Word] = []
    cmds: list[Word] = []
    i = 0
    while i < len(args):
        raw = args[i].value
        v = (raw or "").lstrip("-")
        if raw is not None and raw.startswith("-") and f"-{v}" in _SQLITE_VALUES \
                and i + 1 < len(args):
            if v in ("cmd", "c"):
                cmds.append(args[i + 1])
            elif v == "init" and args[i + 1].dynamic == "subst":  # -init <(..): printed SQL
                apply_sql(e, f"{prog(e)} -init", args[i + 1])
            elif v == "init" and args[i + 1].value in STDIN_FILES:  # -init /dev/stdin <<< ..
                e.stdin_reader = _sql_stdin(f"{prog(e)} -init (its input)")
            elif v == "init":
                e.add("exec", f"{prog(e)} -init runs commands from a file")
                e.reads.append(args[i + 1])
            i += 2
            continue
        if raw is None or not raw.startswith("-"):
            pos.append(args[i])
        i += 1
    scratch = not pos or pos[0].value in (":memory:", "")
    readonly = any(a.value in ("-readonly", "--readonly") for a in args)
    for code in cmds:
        apply_sql(e, "sqlite3 -cmd", code, scratch, readonly)
    has_cmd = bool(cmds)
    if pos:
        db = pos[0]
        sql = pos[1:]
        for code in sql:
            apply_sql(e, "sqlite3", code, scratch, readonly)
        if not sql and not has_cmd and e.stdin_reader is None:
            e.stdin_reader = _sqlite_stdin(None if scratch else db, scratch, readonly)
        if not scratch:
            _sqlite_database(e, db, readonly)
    elif not has_cmd:  # duckdb -c SQL: an in-memory database, the SQL judged above
        e.stdin_reader = _sqlite_stdin(None, scratch=True, readonly=readonly)


def _sqlite_database(e: Effect, db: Word, readonly: bool) -> None:
    """The database file: written when the SQL writes, else read; a log beside it that
    opening it finishes (unless ``-readonly``) rewrites it."""
    (e.writes if e.risk not in ("read",) else e.reads).append(db)
    if ".git" in (db.value or "").split("/") and not readonly:
        e.creates.append((prog(e), db))  # sqlite3 .git/index.lock 'select 1': a lock git
        # stops at
    if not readonly and db.value is not None:
        e.loads_here.append(Loads((f"{db.value}-wal", f"{db.value}-journal"),
                                  runs=_unfinished_log))


def _unfinished_log(path: str) -> str:
    """A database's write-ahead log or rollback journal beside it (a repository can carry
    one): opening the database finishes it, rewriting the database and deleting the log."""
    return "a write-ahead log or journal of the database, which opening it writes into the " \
        "database and then deletes"


def _server_client(short_values: str, longs: frozenset[str], code_opts: tuple[str, ...],
                   file_opts: tuple[str, ...], pager_opts: tuple[str, ...] = (),
                   out_opts: tuple[str, ...] = ()) -> Rule:
    """``psql -c SQL``, ``mysql -e SQL``: a client of a database server; a pager option
    (``mysql --pager=CMD``) names a shell command it runs its output through, an output
    option (``psql -o FILE``, ``-L FILE``, ``mysql --tee=FILE``) a file it writes, or with
    ``|`` a command its output is piped to (``psql -o '|CMD'``)."""

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, short_values, longs)
        name = prog(e)
        e.add("network", f"{name} talks to a database server")
        for pager in o.all(*pager_opts):
            e.add("exec", f"{name} runs its output through a pager command")
            e.scripts.append((f"{name} --pager", pager))
        for out in o.all(*out_opts):
            if out.value is not None and out.value.startswith("|"):
                e.add("exec", f"{name} pipes its output to a shell command")
                e.scripts.append((f"{name} -o", Word.of(out.value[1:])))
            else:
                e.writes.append(out)
                e.add("write", f"{name} writes its output to a file")
        codes = o.all(*code_opts)
        for code in codes:
            apply_sql(e, f"{name} {code_opts[0]}", code)
        files = o.all(*file_opts)
        if any(w.value in STDIN_FILES for w in files):
            e.stdin_reader = _sql_stdin(f"{name} -f -")
        elif o.has(*file_opts):
            e.add("exec", f"{name} runs SQL from a file")
            e.reads.extend(files)
        elif not codes:
            e.stdin_reader = _sql_stdin(f"{name} <<")

    return rule


_psql = _server_client("cdfhpUvWFRPToLS", frozenset({
    "--command", "--dbname", "--file", "--host", "--port", "--username", "--set",
    "--variable", "--output", "--log-file", "--field-separator", "--record-separator",
    "--pset", "--table-attr"}), ("-c", "--command"), ("-f", "--file"),
    out_opts=("-o", "--output", "-L", "--log-file"))
_mysql = _server_client("eDhuPpSBT", frozenset({
    "--execute", "--database", "--host", "--user", "--port", "--password", "--socket",
    "--init-command", "--default-character-set", "--pager", "--tee"}),
    ("-e", "--execute", "--init-command"), ("--init-file",), ("--pager",), ("--tee",))


_clickhouse_client = _server_client("qdhufC", frozenset({
    "--query", "--database", "--host", "--port", "--user", "--password", "--format",
    "--queries-file", "--config-file", "--param", "--max_threads"}),
    ("-q", "--query"), ("--queries-file",))
_cockroach_sql = _server_client("ed", frozenset({
    "--execute", "--database", "--url", "--host", "--port", "--user", "--certs-dir",
    "--format", "--file"}), ("-e", "--execute"), ("-f", "--file"))
_sqlcmd = _server_client("SdUPQqiovtlHAawsc", frozenset(), ("-Q", "-q"), ("-i",))
_snowsql = _server_client("qafdsuwrcoD", frozenset({
    "--query", "--accountname", "--filename", "--dbname", "--schemaname", "--username",
    "--warehouse", "--rolename", "--connection", "--option", "--variable"}),
    ("-q", "--query"), ("-f", "--filename"))
_mycli = _server_client("ehuPpSDR", frozenset({
    "--execute", "--host", "--user", "--port", "--password", "--socket", "--database",
    "--prompt"}), ("-e", "--execute"), ())
_trino = _server_client("f", frozenset({
    "--execute", "--server", "--catalog", "--schema", "--user", "--file", "--output-format"}),
    ("--execute",), ("-f", "--file"))


_cqlsh = _server_client("eufk", frozenset({
    "--execute", "--username", "--password", "--file", "--keyspace", "--cqlshrc",
    "--connect-timeout", "--request-timeout", "--encoding"}), ("-e", "--execute"),
    ("-f", "--file"))


def _influx(e: Effect, args: list[Word]) -> None:
    """``influx -execute 'DROP DATABASE x'`` (1.x, single-dash long options): InfluxQL judged
    as SQL; ``influx delete``/``bucket delete`` (2.x) delete data."""
    words = [Word.of("--" + (w.value or "").lstrip("-")) if (w.value or "").startswith("-")
             and (w.value or "").lstrip("-") in ("execute", "import", "path", "host",
                                                 "database", "username", "password")
             else w for w in args]
    _influx_client(e, words)
    verb = teardown_verb(args)
    if verb is not None:  # influx delete --bucket b, influx bucket delete (2.x)
        e.add("destructive", f"influx {verb} deletes data")


_influx_client = _server_client("", frozenset({
    "--execute", "--path", "--host", "--database", "--username", "--password"}),
    ("--execute",), ("--path",))


def _subcommand_client(client: Rule, subcommands: frozenset[str]) -> Rule:
    """``clickhouse client -q SQL``, ``cockroach sql -e SQL``: a program whose subcommand is a
    database client; its other subcommands run the server or tools (``exec``)."""

    def rule(e: Effect, args: list[Word]) -> None:
        if args and args[0].value in subcommands:
            client(e, args[1:])
        else:
            e.add("exec", f"{prog(e)} runs a database server or tool")

    return rule


def _bq(e: Effect, args: list[Word]) -> None:
    """``bq query 'SQL'``: the positionals after ``query`` are SQL; ``bq rm`` deletes."""
    o = parse_opts(args, "", frozenset({"--project_id", "--dataset_id", "--location",
                                        "--format", "--destination_table"}),
                   stop_at_positional=True)
    if o.positionals and o.positionals[0].value == "query":
        e.add("network", "bq talks to BigQuery")
        rest = parse_opts(o.positionals[1:], "", frozenset({
            "--parameter", "--destination_table", "--format", "--max_rows", "--location"}))
        for code in rest.positionals:
            apply_sql(e, "bq query", code)
        if not rest.positionals:
            e.stdin_reader = _sql_stdin("bq query <<")
        return
    _cloud(e, args)


_REDIS_GONE = frozenset({"flushall", "flushdb", "shutdown", "del", "unlink", "debug"})
"""Redis commands that delete data or crash the server (``DEBUG SEGFAULT``, ``DEBUG RELOAD``)."""
_REDIS_PLANTS = frozenset({"dir", "dbfilename", "logfile", "appenddirname", "appendfilename"})
"""``CONFIG SET`` parameters that choose which file the server writes: with ``SAVE`` the
database (attacker-chosen bytes) lands anywhere the server may write (``authorized_keys``,
a crontab)."""


_REDIS_FLUSHES = frozenset({("script", ("flush",)), ("function", ("flush",)),
                            ("function", ("delete",)), ("cluster", ("reset",)),
                            ("acl", ("deluser",))})


def _redis_command(e: Effect, words: list[str]) -> None:
    """Judge one Redis command given as its words."""
    cmd = words[0].lower() if words else ""
    args = [w.lower() for w in words[1:]]
    if cmd in _REDIS_GONE:
        e.add("destructive", f"redis-cli {cmd} deletes data or stops the server")
    elif cmd == "config" and args[:1] == ["set"] and _REDIS_PLANTS & set(args[1::2]):
        e.add("destructive", "")
        e.at_least("deny", "redis CONFIG SET dir/dbfilename makes the server write its "
                           "database to any file (a planted payload)")
    elif cmd in ("replicaof", "slaveof") and args[:2] != ["no", "one"]:
        e.add("destructive", f"redis-cli {cmd} replaces the dataset with another server's")
    elif (cmd, tuple(args[:1])) in _REDIS_FLUSHES:
        e.add("destructive", f"redis-cli {cmd} {args[0]} deletes the server's scripts or "
                             "functions")
    elif cmd == "module" and args[:1] in (["load"], ["loadex"]):
        e.add("exec", "")
        e.at_least("deny", "redis MODULE LOAD loads native code into the server")
    elif cmd in ("eval", "eval_ro") and words[1:]:
        for call in _REDIS_SCRIPT_CALL.finditer(words[1]):
            _redis_command(e, re.findall(r"['\"]([^'\"]*)['\"]", call.group(1)))


_REDIS_LONG_VALUES = frozenset({"--user", "--pass", "--cacert", "--cacertdir", "--cert",
                                "--key", "--sni", "--tls-ciphers", "--tls-ciphersuites",
                                "--eval", "--pattern", "--count", "--quoted-pattern",
                                "--memkeys-samples", "--keystats-samples", "--cluster",
                                "--rdb", "--functions-rdb", "--replica", "--pipe-timeout"})
_REDIS_SCRIPT_CALL = re.compile(r"redis\.p?call\s*\(\s*(['\"][^)]*)\)", re.I)
"""``redis.call('FLUSHALL')`` in a Lua script given to ``EVAL``: a command the server runs."""


def _redis(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "hpansuriRdD", _REDIS_LONG_VALUES, stop_at_positional=True)
    e.add("network", "redis-cli talks to a server")
    if not o.positionals:
        e.stdin_reader = _redis_stdin
        return
    if any(w.value is None for w in o.positionals[:3]):
        e.at_least("ask", "redis-cli command only known at run time")
    if o.positionals[0].value is not None:  # xargs redis-cli del: the command is known
        _redis_command(e, [w.value or "" for w in o.positionals])


def _redis_stdin(e: Effect, text: Word) -> None:
    if text.value is None:
        e.at_least("ask", "redis-cli commands only known at run time")
        return
    for line in text.value.splitlines():
        _redis_command(e, line.split())


_MONGO_GONE = re.compile(r"\b(?:dropDatabase|dropAllUsers|dropAllRoles|dropIndexes)\b|"
                         r"\.drop\s*\(|\.(?:deleteMany|remove|updateMany|replaceMany)\s*\("
                         r"\s*\{\s*\}")
"""mongosh code that drops, or deletes or changes every document (an empty filter)."""


def _mongo(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "uph", frozenset({"--eval", "--host", "--port", "--username",
                                           "--password", "--file"}))
    e.add("network", f"{prog(e)} talks to a database server")
    for code in o.all("--eval"):
        _mongo_code(e, f"{prog(e)} --eval", code)
    if not o.has("--eval", "--file"):  # mongosh DB <<'JS': the script on its input
        e.stdin_reader = _mongo_stdin


def _mongo_stdin(e: Effect, text: Word) -> None:
    if text.value is None:  # mongosh < script.js: a file not shown
        e.at_least("ask", f"{prog(e)} runs a script only known at run time")
    else:
        _mongo_code(e, f"{prog(e)} <<", text)


def _mongo_code(e: Effect, how: str, code: Word) -> None:
    """mongosh code is JavaScript with node's modules: its shell-outs are judged too."""
    if code.value is None or _MONGO_GONE.search(code.value):
        e.add("destructive", f"{how} drops or deletes every document")
    inline_code(e, how, "javascript", code)


# ---------------------------------------------------------------- containers and clusters

_DOCKER_READ = frozenset({"ps", "images", "inspect", "logs", "version", "info", "stats", "top",
                          "diff", "history", "events", "port", "search", "ls", "list",
                          "config", "--version", "help", "df", "context", "du"})
_DOCKER_GONE = frozenset({"rm", "rmi", "prune", "kill", "remove", "delete", "reset"})
_DOCKER_GROUPS = frozenset({"container", "image", "volume", "network", "system", "builder",
                            "buildx", "plugin", "secret", "service", "stack", "node", "swarm",
                            "context", "manifest", "trust", "machine", "pod", "compose",
                            "kube", "config", "checkpoint", "generate", "play", "healthcheck",
                            "farm", "artifact", "quadlet", "scout", "sbom"})
"""docker's and podman's management commands: the verb is the word after (``docker config
rm`` deletes, though ``config`` alone only shows)."""


_HOST_DIRS = ("/etc", "/root", "/home", "/run", "/var", "/proc", "/sys", "/dev", "/boot",
              "/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/srv", "/mnt", "/media")
"""Host folders a container must not see writable: mounting one gives it the host."""
_HOST_FLAGS = re.compile(r"^--(?:privileged|(?:pid|ipc|userns|uts|cgroupns)=host|"
                         r"cap-add=(?:all|sys_admin|sys_ptrace|sys_module|dac_read_search)|"
                         r"device|security-opt=(?:apparmor|seccomp)=unconfined)", re.I)


_HOST_VALUES = frozenset({"--pid", "--ipc", "--userns", "--uts", "--cgroupns", "--cap-add",
                          "--security-opt"})
"""Options whose value, as the next word, can give the container the host."""


def _host_mounts(e: Effect, args: list[Word]) -> None:
    """``run -v /:/host``, ``--mount source=/etc``, ``--privileged``: the container gets the
    host (its files, its processes, the Docker socket), so whatever it runs is unseen."""
    for i, w in enumerate(args):
        v = w.value or ""
        spec = ""
        if v in ("-v", "--volume", "--mount") and i + 1 < len(args):
            nxt = args[i + 1]
            if nxt.value is None:
                e.at_least("ask", f"{prog(e)}: a mount only known at run time")
                continue
            spec = nxt.value
        elif v.startswith(("--volume=", "--mount=")):
            spec = v.partition("=")[2]
        elif v.startswith("-v") and len(v) > 2:
            spec = v[3:] if v.startswith("-v=") else v[2:]
        joined = f"{v}={args[i + 1].value}" if v in _HOST_VALUES and i + 1 < len(args) else v
        if _HOST_FLAGS.match(joined):  # --pid host is --pid=host
            e.at_least("deny", f"{prog(e)} {joined} gives the container the host")
        source = _mount_source(spec)
        if source.startswith("/"):  # /./ and /tmp/../ are /
            source = posixpath.normpath(source)
        if source and (source.rstrip("/") == "" or source.rstrip("/").startswith(_HOST_DIRS)
                       or source.startswith("~") or "docker.sock" in source):
            e.add("exec", "")
            e.at_least("deny", f"{prog(e)} mounts the host's {source} into a container")


_RUN_VALUES = frozenset({
    "-v", "--volume", "--mount", "-e", "--env", "--env-file", "-p", "--publish", "-w",
    "--workdir", "-u", "--user", "--name", "--network", "--net", "--entrypoint", "-m",
    "--memory", "-l", "--label", "--label-file", "-h", "--hostname", "--add-host", "--device",
    "--platform", "--pull", "--restart", "--cap-add", "--cap-drop", "--security-opt", "--tmpfs",
    "--ulimit", "--log-driver", "--log-opt", "--runtime", "--gpus", "--shm-size", "--ipc",
    "--pid", "--uts", "--userns", "--cgroupns", "--dns", "--expose", "--link", "--cpus",
    "--stop-signal", "--stop-timeout", "--cidfile", "--volumes-from", "--ip", "-a",
    "--attach", "--cpu-shares", "-c", "--cpuset-cpus", "--memory-swap", "--group-add",
    "--health-cmd", "--network-alias", "--mac-address", "--detach-keys", "--cgroup-parent"})
"""Options of ``docker run`` that take a value as the next word."""


def _binds_host(args: list[Word]) -> bool:
    """``-v SRC:DST`` / ``--mount source=SRC`` with a host path (or one only known at run
    time), not a named volume."""
    for i, w in enumerate(args):
        v = w.value or ""
        spec: str | None = ""
        if w.value is None and w.text.startswith(("--volume", "--mount", "-v")):
            return True
        if v in ("-v", "--volume", "--mount") and i + 1 < len(args):
            spec = args[i + 1].value
        elif v.startswith(("--volume=", "--mount=")):
            spec = v.partition("=")[2]
        elif v.startswith("-v") and len(v) > 2:
            spec = v[3:] if v.startswith("-v=") else v[2:]
        if spec is None:
            return True
        source = _mount_source(spec)
        if source.startswith(("/", ".", "~", "$")):
            return True
    return False


def _container_command(args: list[Word]) -> list[Word]:
    """The command ``docker run [OPTIONS] IMAGE COMMAND..`` runs in the container."""
    i = 0
    while i < len(args):
        v = args[i].shown
        if not v.startswith("-"):
            return args[i + 1:]
        i += 2 if v in _RUN_VALUES else 1
    return []


def _mount_source(spec: str) -> str:
    if "source=" in spec or "src=" in spec:
        found = re.search(r"(?:^|,)(?:source|src)=([^,]*)", spec)
        return found.group(1) if found else ""
    return spec.split(":")[0] if ":" in spec else ""


_KUSTOMIZE_RUNS = frozenset({"--enable-exec", "--enable-alpha-plugins", "--enable-helm",
                             "--helm-command", "--enable-star"})
"""Options with which ``kustomize build`` runs programs: exec and plugin generators, helm
charts inflated by the helm binary (downloaded charts included)."""


_COMPOSE_VALUES = "fp"
_COMPOSE_LONG_VALUES = frozenset({"--file", "--project-name", "--env-file", "--profile",
                                  "--project-directory", "--ansi", "--parallel", "--progress",
                                  "--podman-args", "--podman-run-args", "--podman-path"})
"""Options of ``docker compose`` / ``docker-compose`` / ``podman-compose`` that take a value
before the verb (``docker compose -f FILE down``)."""


def _compose_verb(e: Effect, args: list[Word]) -> list[Word]:
    """The words from the verb on, after compose's own options (``-f FILE -p NAME``). The
    files those options name are read, and ``config`` prints what they hold
    (``--env-file ~/.aws/credentials config``)."""
    o = parse_opts(args, _COMPOSE_VALUES, _COMPOSE_LONG_VALUES, stop_at_positional=True)
    e.reads.extend(w for w in o.all("-f", "--file", "--env-file", "--project-directory")
                   if w.value != "-")
    return o.positionals


def _copies_out(e: Effect, args: list[Word]) -> bool:
    """``docker cp CONTAINER:SRC DEST``: DEST, a host path, is written (replaced when it is
    a file); False for a copy into a container."""
    places = [w for w in args if not (w.value or "-").startswith("-")]
    if len(places) != 2 or ":" not in (places[0].value or "") or ":" in (places[1].value or ""):
        return False
    e.writes.append(places[1])
    e.replaces.append(places[1])
    e.fetched.append(fetched_name(places[0].value or ""))
    return True


def _docker_client(e: Effect, o: Opts) -> None:
    """``--config DIR``: its config.json may name folders of CLI plugins, each of which
    runs; ``-H tcp://..``: the daemon of another machine."""
    if o.has("--config"):
        e.add("exec", f"{prog(e)} --config runs the CLI plugins that configuration names")
    for host in o.all("-H", "--host"):
        if host.value is None or not host.value.startswith(("unix://", "npipe://")):
            e.add("network", f"{prog(e)} -H talks to the daemon of another machine (a "
                             "tcp:// or ssh:// host)")
    for context in o.all("-c", "--context"):
        if context.value != "default":
            e.add("network", f"{prog(e)} --context may talk to the daemon of another machine")


def _docker(e: Effect, args: list[Word]) -> None:
    if prog(e) in ("docker-compose", "podman-compose"):
        args = [Word.of("compose"), *_compose_verb(e, args)]
    o = parse_opts(args, "Hc", frozenset({"--host", "--context", "--config", "--log-level",
                                          "--file", "-f", "--project-name", "-p", "--env-file",
                                          "--profile"}), stop_at_positional=True)
    if o.positionals and o.positionals[0].value == "compose":
        o.positionals[1:] = _compose_verb(e, o.positionals[1:])
    _docker_client(e, o)
    words = [w.value or "" for w in o.positionals]
    sub = words[:2] if words and words[0] in _DOCKER_GROUPS else words[:1]
    verb = sub[-1] if sub else ""
    rest = o.positionals[len(sub):]
    flags = {w.value for w in rest}
    if verb in _DOCKER_GONE or (verb == "down" and flags & {"-v", "--volumes", "--rmi"}) or (
            verb == "leave" and flags & {"-f", "--force"}):
        e.add("destructive", f"{prog(e)} {' '.join(sub)} deletes containers, images or data")
    elif sub == ["kube", "generate"]:  # podman kube generate POD: its YAML, printed
        targets = parse_opts(rest, "f", frozenset({"--filename"})).all("-f", "--filename")
        e.writes.extend(targets)
        e.replaces.extend(targets)
        if targets:
            e.add("write", f"{prog(e)} kube generate -f writes the YAML to a file")
    elif verb == "search" or sub in (["manifest", "inspect"], ["buildx", "imagetools"],
                                     ["trust", "inspect"]):
        e.add("network", f"{prog(e)} {' '.join(sub)} asks an image registry on the network")
    elif verb in _DOCKER_READ and "--bootstrap" in flags:
        e.add("exec", f"{prog(e)} {' '.join(sub)} --bootstrap starts a builder")
    elif verb in _DOCKER_READ or verb in ("",):
        e.add("read" if verb else "exec", "")
    elif verb == "exec":
        e.add("exec", f"{prog(e)} exec runs a command in a container")
        _host_mounts(e, rest)
        inner = parse_opts(rest, "euwd", frozenset({"--env", "--user", "--workdir",
                                                    "--env-file"}), stop_at_positional=True)
        if len(inner.positionals) > 1:
            e.nested.append((f"{prog(e)} exec", inner.positionals[1:]))
    elif verb == "cp" and _copies_out(e, rest):
        e.add("write", f"{prog(e)} cp copies a container's file into this host's files")
    else:
        e.add("exec", f"{prog(e)} {' '.join(sub)} changes containers")
        _host_mounts(e, rest)
        command = _container_command(rest) if verb == "run" and _binds_host(rest) else []
        if command:  # what it runs reaches the mounted host folders
            e.nested.append((f"{prog(e)} run (with a host folder mounted)", command))


_KUBE_READ = frozenset({"get", "describe", "logs", "explain", "version", "api-resources",
                        "api-versions", "cluster-info", "top", "diff", "auth", "wait",
                        "events", "completion", "help"})


_KUBE_SHOWS = frozenset({"get", "describe", "logs", "explain", "version", "api-resources",
                         "api-versions", "top", "events", "cluster-info"})
"""kubectl verbs that only show the cluster's state (read like ``docker ps``), unless what they
show is credentials."""


def _shows_secrets(words: list[str], flags: set[str]) -> bool:
    """``kubectl get secret x -o yaml``, ``get --raw /api/..``: the output holds credentials."""
    return "--raw" in flags or any(
        part.split("/")[0].split(".")[0] in ("secret", "secrets")
        for w in words[1:] for part in w.lower().split(","))


_KUBE_CLIENT_DRY_RUNS = frozenset({"create", "run", "apply", "delete", "replace", "patch",
                                   "label", "annotate", "expose", "set", "autoscale"})
"""Verbs whose ``--dry-run=client`` prints the object it would send and sends nothing."""


_KUBE_VALUES = frozenset({"--namespace", "--context", "--cluster", "--kubeconfig",
                          "--selector", "--output", "--container", "--filename", "--server",
                          "--template", "--kustomize"})
_KUBE_FILE_FORMATS = frozenset({"go-template-file", "templatefile", "jsonpath-file"})
_KUBE_TEMPLATE_FILES = re.compile(r"(?:go-template-file|templatefile|jsonpath-file)=(.+)")
"""``-o go-template-file=PATH``: a file kubectl reads (and prints, when it holds no action)."""
"""kubectl's long options that take a value (``-f FILE``: among the short ones)."""


def _kube_files(e: Effect, args: list[Word]) -> None:
    """``--kubeconfig FILE`` may name credential plugins kubectl runs (``users[].user.exec``)
    and ``--profile-output FILE`` is written whole."""
    o = parse_opts(args, "", frozenset({"--kubeconfig", "--profile-output"}))
    if o.has("--kubeconfig"):
        e.add("exec", f"{prog(e)} runs the credential plugins a kubeconfig names")
    for out in o.all("--profile-output"):
        e.writes.append(out)
        e.replaces.append(out)
        e.add("write", f"{prog(e)} --profile-output writes a profile")


def _client_dry_run(e: Effect, verb: str, args: list[Word], flags: set[str]) -> bool:
    """``kubectl apply/create/delete .. --dry-run=client``: the manifests and files it
    names are read and the object printed; nothing is sent (a URL is downloaded)."""
    if verb not in _KUBE_CLIENT_DRY_RUNS or "--dry-run=client" not in (a.value for a in args) \
            or flags & {"--kubeconfig", "--server", "--raw", "--save-config", "-k",
                        "--kustomize"}:
        return False
    manifests = parse_opts(args, "nlocfsA", _KUBE_VALUES).all("-f", "--filename")
    e.reads.extend(manifests)
    if any("://" in (w.value or "://") for w in manifests):
        e.add("network", f"{prog(e)} {verb} -f URL downloads the manifest")
    for i, a in enumerate(args):  # --from-file=[KEY=]PATH or --from-file [KEY=]PATH
        name, eq, value = (a.value or "").partition("=")
        if name in ("--from-file", "--from-env-file"):
            given = Word.of(value) if eq else args[i + 1] if i + 1 < len(args) else None
            if given is not None:
                path = (given.value or "").rpartition("=")[2] if given.value else None
                e.reads.append(Word.of(path) if path is not None else given)
    return True


def _kubectl(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "nlocfsA", _KUBE_VALUES, stop_at_positional=True)
    words = [w.value or "" for w in o.positionals]
    verb = words[0] if words else ""
    flags = {(a.value or "").split("=")[0] for a in args}
    if flags & {"--kubeconfig", "--profile-output"} or any(
            abbreviates(f, "--profile-output") for f in flags):
        _kube_files(e, args)
    every = parse_opts(args, "nlocfsAk", _KUBE_VALUES)  # options after the verb too
    _kube_reaches(e, every, args)
    if _client_dry_run(e, verb, args, flags):
        return
    if verb in ("delete", "drain") or "--prune" in flags or (
            verb == "replace" and "--force" in flags) or (verb == "config" and len(words) > 1
                                                          and words[1].startswith("delete")):
        e.add("destructive", f"{prog(e)} {verb} deletes cluster resources")
    elif verb == "scale" and any(re.fullmatch(r"--replicas=0+", a.value or "") for a in args):
        e.add("destructive", f"{prog(e)} scale --replicas=0 stops every replica")
    elif (verb in _KUBE_SHOWS and not _shows_secrets(words, flags)) or words[:2] in (
            ["config", "get-contexts"], ["config", "current-context"],
            ["config", "get-clusters"]):
        e.reads.extend(o.all("--kubeconfig", "-f", "--filename"))
        e.add("read", "")  # kubectl get pods: shows the cluster's state, changes nothing
    elif verb == "kustomize" and not any("://" in w or "github.com" in w for w in words):
        e.reads.extend(o.positionals[1:] or [Word.of(".")])  # renders a folder, locally
        e.loads_here.append(Loads(tuple(f"{w.value or '.'}/{name}" for w in (
            o.positionals[1:] or [Word.of(".")]) for name in _KUSTOMIZATIONS),
            runs=_remote_resources))
        for out in every.all("-o", "--output"):
            e.writes.append(out)
            e.replaces.append(out)
            e.add("write", f"{prog(e)} kustomize -o writes what it renders")
        if any(w.split("=")[0] in _KUSTOMIZE_RUNS for w in words):
            e.add("exec", f"{prog(e)} kustomize runs the programs the kustomization names "
                          "(exec plugins, helm)")
    elif verb in _KUBE_READ or (verb == "config" and len(words) > 1 and words[1] == "view"):
        e.add("network", f"{prog(e)} {verb} reads from the cluster")
    elif verb == "cp" and _copies_out(e, _kube_places(o.positionals[1:])):
        e.add("network", f"{prog(e)} cp copies a pod's file into this host's files")
    elif verb == "cp" and len(places := _kube_places(o.positionals[1:])) == 2 and \
            ":" in (places[1].value or ":") and ":" not in (places[0].value or ":"):
        e.add("network", f"{prog(e)} cp copies a file into a pod")
        e.reads.append(places[0])
        uploads(e, [places[0]], [places[1]])
    elif verb == "exec":
        e.add("exec", f"{prog(e)} exec runs a command in a pod")
        cut = next((i for i, a in enumerate(args) if a.value == "--"), None)
        if cut is not None and cut + 1 < len(args):
            e.nested.append((f"{prog(e)} exec", args[cut + 1:]))
    else:
        e.add("network", f"{prog(e)} {verb} changes the cluster")


def _kube_reaches(e: Effect, o: Opts, args: list[Word]) -> None:
    """``-s URL`` names another server than the configured cluster's, ``-f URL`` is fetched
    (the network, where a word of the URL can carry data out); ``-o go-template-file=F``
    reads F."""
    if o.has("-s", "--server"):
        e.add("network", f"{prog(e)} --server talks to the server it names")
    if any("://" in (w.value or "://") for w in o.all("-f", "--filename", "-k",
                                                       "--kustomize")):
        e.add("network", f"{prog(e)} -f URL fetches it")
    formats = o.all("-o", "--output")
    for w in formats:
        m = _KUBE_TEMPLATE_FILES.fullmatch(w.value or "")
        if m is not None:
            e.reads.append(Word.of(m.group(1)))
        elif w.value is None:
            e.reads.append(w)  # a format only known at run time may name a file
    if any((w.value or "").partition("=")[0] in _KUBE_FILE_FORMATS for w in formats):
        e.reads.extend(o.all("--template"))  # -o go-template-file --template=PATH


_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _remote_resources(path: str) -> str:
    """A kustomization that names resources by URL: rendering it fetches them."""
    data = small_file(path, 1 << 20)
    text = data.decode("utf-8", "replace") if data is not None else "://"
    return "it names resources by URL, which rendering fetches" if re.search(
        r"://|github\.com/|\bgit@", text) else ""


def _kube_places(args: list[Word]) -> list[Word]:
    """The paths ``kubectl cp`` copies between, its options and their values left out."""
    places: list[Word] = []
    skip = False
    for w in args:
        if skip or (w.value or "").startswith("-"):
            skip = not skip and (w.value or "") in ("-n", "--namespace", "-c", "--container",
                                                    "--retries", "--context")
            continue
        places.append(w)
    return places


_RUNS_PROGRAM = frozenset({"--post-renderer", "--plugins-dir"})


def _verbs(name: str, destroy: frozenset[str], read: frozenset[str],
           destroy_flags: frozenset[str] = frozenset(),
           shows: frozenset[str] = frozenset()) -> Rule:
    """Tools whose first positional is a verb: teardown verbs destroy, listing verbs read
    (from the network; ``shows``: only show state, like ``kubectl get``)."""

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, "", stop_at_positional=False)
        words = [w.value or "" for w in o.positionals]
        pair = " ".join(words[:2])
        flags = {(w.value or "").split("=")[0] for w in args}
        if (words and words[0] in destroy) or pair in destroy or flags & destroy_flags:
            e.add("destructive", f"{name} {pair or words[0]} tears down infrastructure")
        elif flags & _RUNS_PROGRAM:  # helm template --post-renderer ./x: x runs
            e.add("exec", f"{name} runs a program an option names")
        elif (words and words[0] in shows) or pair in shows:
            e.add("read", "")
        elif words[:1] in (["apply"], ["up"]) and flags & {"-auto-approve", "--auto-approve",
                                                          "--yes", "-y"}:
            e.add("exec", f"{name} apply changes infrastructure")
            e.unseen = f"{name} apply -auto-approve changes what no plan shown here lists"
        elif (words and words[0] in read) or pair in read or not words:
            e.add("network" if words else "read", "")
        else:
            e.add("exec", f"{name} {words[0]} changes infrastructure")

    return rule


_F = frozenset
_helm = _verbs("helm", _F({"uninstall", "delete", "del", "un", "repo remove", "plugin uninstall"}),
               _F({"get", "show", "search"}),
               shows=_F({"list", "ls", "status", "history", "template", "lint", "version", "env",
                         "repo list", "help"}))
"""helm's listing verbs and local renders show state like ``kubectl get``; ``get values`` and
``show`` may print credentials or fetch a chart."""
_HELM_LOCAL = _F({"show", "inspect", "dependency", "dep"})
"""Verbs that read a chart: a folder or archive here (``./chart``) is read, any other name
is fetched from its repository."""


def _helm_chart(e: Effect, args: list[Word]) -> None:
    """``helm template oci://..`` fetches the chart it renders; ``helm show chart ./c`` and
    ``helm dependency list ./c`` read a chart folder here; the rest by verb."""
    words = [w.value for w in args]
    verbs = [v for v in words if v is not None and not v.startswith("-")]
    local = [w for w in args if (w.value or "").startswith(("./", "../")) or (
        w.value or "").endswith(".tgz")]
    if any("://" in (v or "") for v in words):
        e.add("network", "helm fetches the chart from a registry")
    elif None not in words and verbs[:1] and verbs[0] in _HELM_LOCAL and len(verbs) == 3 and \
            verbs[1] in (("list", "ls") if verbs[0] in ("dependency", "dep") else (
                "chart", "values", "readme", "crds", "all")) and \
            local and local[-1].value == verbs[2] and not set(words) & {"--repo", "--verify"}:
        e.reads.append(local[-1])  # helm show chart ./charts/app: its Chart.yaml
        return
    _helm(e, args)
_terraform_verbs = _verbs("terraform", _F({"destroy", "state rm", "workspace delete",
                                           "force-unlock"}),
                          _F({"version", "validate", "show", "output", "state list",
                              "state show", "providers", "graph", "workspace list",
                              "workspace show", "help", "console"}), _F({"-destroy"}),
                          shows=_F({"workspace show"}))


def _terraform(e: Effect, args: list[Word]) -> None:
    """``terraform fmt`` rewrites files unless ``-check`` or ``-write=false`` (which only
    report); the rest by verb (``workspace show`` prints the local workspace's name)."""
    words = [w.value for w in args if not (w.value or "-").startswith("-")]
    if words[:1] != ["fmt"]:
        _terraform_verbs(e, args)
    elif any((w.value or "").lstrip("-") in ("check", "check=true", "write=false")
             for w in _go_flags(args[[w.value for w in args].index("fmt") + 1:])):
        e.reads.extend(w for w in args[1:] if not (w.value or "-").startswith("-"))
    else:
        e.add("write", f"{prog(e)} fmt rewrites files")


def _go_flags(args: list[Word]) -> list[Word]:
    """The options Go's flag parsing reads: those before the first other word (``terraform
    fmt main.tf -check`` rewrites main.tf: ``-check`` is a file name there)."""
    out = []
    for w in args:
        if w.value is None or not w.value.startswith("-") or w.value in ("-", "--"):
            break
        out.append(w)
    return out
_pulumi = _verbs("pulumi", _F({"destroy", "down", "stack rm", "state delete", "cancel"}),
                 _F({"preview", "stack ls", "whoami", "version", "about", "config get",
                     "stack output", "logs", "help"}))


def _journalctl(e: Effect, args: list[Word]) -> None:
    """``journalctl -u UNIT`` reads the system's logs (a read outside the workspace);
    ``--vacuum-*`` deletes archived journals, ``--rotate`` and ``--flush`` change them."""
    o = parse_opts(args, "uDpntSUkbgMiFo", frozenset({
        "--unit", "--directory", "--file", "--priority", "--lines", "--since", "--until",
        "--boot", "--grep", "--output", "--identifier", "--root", "--image", "--namespace",
        "--cursor", "--after-cursor", "--user-unit", "--facility", "--field", "--fields"}))
    flags = {name.split("=")[0] for name in o.flags}
    if any(f.startswith("--vacuum") for f in flags):
        e.add("destructive", "journalctl --vacuum deletes archived logs")
    elif flags & {"--rotate", "--flush", "--relinquish-var", "--sync", "--setup-keys",
                  "--update-catalog"}:
        e.add("write", "journalctl changes the journal files")
    given = o.all("-D", "--directory", "--file", "--root", "-i")
    if flags & _JOURNAL_FACTS and not given:
        return  # how much room the logs take, which boots they hold: no line of them
    e.reads.extend(given or [Word.of("/var/log/journal")])  # the system's logs: outside


_JOURNAL_FACTS = frozenset({"--disk-usage", "--list-boots", "--version", "--help", "-h",
                            "--list-namespaces"})


def _cloud(e: Effect, args: list[Word]) -> None:
    """``aws s3 rm``, ``aws ec2 terminate-instances``, ``gcloud ... delete``: teardown.
    ``aws s3 cp``, ``gsutil cp``, ``s3cmd get``: copies between here and the cloud."""
    e.add("network", f"{prog(e)} uses the network")
    verb = teardown_verb(args, positionals=8)
    if verb is not None:
        e.add("destructive", f"{prog(e)} {verb} deletes cloud resources")
    _cloud_copy(e, args)
    words = " ".join([prog(e), *(w.value or "?" for w in args[:2])])
    e.writes.extend(Word.of(f) for f in _CLOUD_SETTINGS.get(words, ()))


_CLOUD_SETTINGS: dict[str, tuple[str, ...]] = {
    "aws configure set": ("~/.aws/config", "~/.aws/credentials"),
    "aws configure import": ("~/.aws/credentials",),
    "gcloud config set": ("~/.config/gcloud/configurations",),
    "az config set": ("~/.azure/config",)}
"""Settings commands that write the user's own configuration (outside the workspace)."""


_CLOUD_COPIES = {"aws": (("s3", "cp"), ("s3", "mv")), "gsutil": (("cp",), ("mv",)),
                 "gcloud": (("storage", "cp"), ("storage", "mv")),
                 "s3cmd": (("get",), ("put",), ("cp",))}
_CLOUD_VALUED = frozenset({"--profile", "--region", "--endpoint-url", "--include", "--exclude",
                           "--acl", "--storage-class", "--content-type", "--cache-control",
                           "--sse", "--sse-kms-key-id", "--expires", "--metadata",
                           "--project", "-h", "-o", "-z", "-j"})


def _cloud_copy(e: Effect, args: list[Word]) -> None:
    """A copy whose source is in the cloud writes its local target (a file there is
    replaced, a folder gets the object's name); one whose target is sends local files."""
    places: list[Word] = []
    skip = False
    for w in args:
        if skip or (w.value or "").startswith("-"):
            skip = not skip and (w.value or "") in _CLOUD_VALUED
            continue
        places.append(w)
    words = tuple(w.value or "" for w in places)
    verb = next((v for v in _CLOUD_COPIES.get(prog(e), ()) if words[:len(v)] == v), None)
    if verb is None or len(places) != len(verb) + 2:
        return
    source, target = places[len(verb)], places[len(verb) + 1]
    remote = [w.value is not None and "://" in w.value for w in (source, target)]
    if remote == [True, False] and target.value != "-":
        e.writes.append(target)
        e.replaces.append(target)
        e.fetched.append(fetched_name(source.value or ""))
        e.add("write", f"{prog(e)} {' '.join(verb)} copies a cloud object into this host's "
                       "files")
    elif remote == [False, True]:
        e.reads.append(source)
        uploads(e, [source], [target])


_TRIVY_LOCAL = frozenset({"fs", "filesystem", "rootfs", "config", "conf"})


def _trivy(e: Effect, args: list[Word]) -> None:
    """``trivy fs --skip-db-update --offline-scan .`` and ``trivy config
    --skip-check-update Dockerfile`` scan here with what is cached; otherwise trivy downloads
    its databases (and ``image`` may pull). ``-o`` writes the report."""
    words = [w.value or "" for w in args]
    verb = words[0] if words else ""
    skips = {"--skip-db-update", "--skip-check-update", "--skip-policy-update"} & set(words)
    local = verb in _TRIVY_LOCAL and skips and (verb in ("config", "conf")
                                               or "--offline-scan" in words)
    if not local:
        e.add("network", "trivy downloads its vulnerability databases or checks")
    reports = [args[i + 1] for i, v in enumerate(words[:-1]) if v in ("-o", "--output")]
    e.reads.extend(w for w in args[1:] if not (w.value or "-").startswith("-") and not any(
        w is r for r in reports))
    for report in reports:
        e.writes.append(report)
        e.replaces.append(report)
        e.add("write", "trivy -o writes the report")


_SKOPEO_LOCAL = ("containers-storage:", "docker-daemon:", "oci:", "oci-archive:", "dir:",
                 "docker-archive:")


def _skopeo(e: Effect, args: list[Word]) -> None:
    """``skopeo inspect docker-daemon:IMG`` reads a local image; a ``docker://`` one is on the
    network; ``copy``/``sync`` write and ``delete`` deletes an image."""
    words = [w.value or "" for w in args]
    verb = next((w for w in words if not w.startswith("-")), "")
    refs = [w for w in words if ":" in w and not w.startswith("-")]
    if verb == "delete":
        e.add("destructive", "skopeo delete deletes an image")
    elif verb in ("copy", "sync"):
        e.add("write", f"skopeo {verb} writes images")
    elif verb not in ("inspect", "list-tags", "--version", "help"):
        e.add("exec", f"skopeo {verb} is not modelled")
    if any(not r.startswith(_SKOPEO_LOCAL) for r in refs):
        e.add("network", "skopeo reaches a registry")


def _dive(e: Effect, args: list[Word]) -> None:
    """``dive --ci IMAGE`` analyses an image and prints; ``dive build`` builds one."""
    words = [w.value for w in args if not (w.value or "-").startswith("-")]
    if words[:1] == ["build"]:
        e.add("exec", "dive build builds an image (its Dockerfile runs)")
    reports = parse_opts(args, "", frozenset({"--json", "--ci-config", "--source"})).all(
        "--json")
    e.writes.extend(reports)
    e.replaces.extend(reports)  # its analysis, written over the file
    if reports:
        e.add("write", "dive --json writes its analysis to a file")


def _pg_restore(e: Effect, args: list[Word]) -> None:
    """``pg_restore DUMP`` prints the SQL a dump holds (``-f FILE`` writes it); with ``-d``
    it restores into a server, and ``-c``/``--clean`` first drops what the dump names."""
    o = parse_opts(args, "dfFnNPtTILjSU", frozenset({
        "--dbname", "--file", "--format", "--schema", "--table", "--index", "--function",
        "--trigger", "--jobs", "--host", "--port", "--username", "--role", "--use-list"}))
    e.reads.extend([*o.positionals, *o.all("-L", "--use-list")])
    for out in o.all("-f", "--file"):
        e.writes.append(out)
        e.replaces.append(out)
        e.add("write", "pg_restore -f writes the SQL to a file")
    if o.has("-d", "--dbname"):
        e.add("network", "pg_restore -d restores into a database server")
        if o.has("-c", "--clean"):
            e.add("destructive", "pg_restore --clean drops the database's objects first")


RULES: dict[str, Rule] = {
    "pg_restore": _pg_restore,
    "trivy": _trivy, "skopeo": _skopeo, "dive": _dive,
    "sqlite3": _sqlite3, "sqlite": _sqlite3, "duckdb": _sqlite3, "psql": _psql,
    "mysql": _mysql,
    "mariadb": _mysql, "redis-cli": _redis, "mongosh": _mongo, "mongo": _mongo,
    "docker": _docker, "podman": _docker, "nerdctl": _docker, "docker-compose": _docker,
    "podman-compose": _docker,
    "kubectl": _kubectl, "oc": _kubectl, "helm": _helm_chart, "terraform": _terraform,
    "tofu": _terraform, "pulumi": _pulumi, "aws": _cloud, "gcloud": _cloud, "az": _cloud,
    "gsutil": _cloud, "s3cmd": _cloud,
    "clickhouse-client": _clickhouse_client,
    "clickhouse": _subcommand_client(_clickhouse_client, frozenset({"client"})),
    "cockroach": _subcommand_client(_cockroach_sql, frozenset({"sql", "demo"})),
    "sqlcmd": _sqlcmd, "snowsql": _snowsql, "mycli": _mycli,
    "trino": _trino, "presto": _trino, "bq": _bq, "cqlsh": _cqlsh, "influx": _influx,
    "journalctl": _journalctl,
}
