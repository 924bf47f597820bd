"""Forking a run from any step (``fork RUN_ID --step N``), through real subprocesses and real
SQLite and PostgreSQL stores: the fork's conversation, data and usage are the original's as they
stood when step N began, its workspace a new folder rebuilt from the ledger, and the original
(rows, folder, audit) is only read.

The scripted model's turn is the number of model calls already in the conversation, so a
fork's continuation script repeats the turns before the fork point and then differs.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, EngineCLI, engine_env, read_tree
from tests.test_console_web import (  # noqa: F401  (browser, server: fixtures)
    ARTIFACTS,
    Server,
    _text,
    browser,
    server,
    wait_for,
)

MACHINE = str(ROOT / "machines" / "coding_agent.yaml")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write(path: str, content: str, base: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"path": path, "content": content}
    if base is not None:
        args["base_hash"] = sha(base)
    return {"tool_calls": [{"name": "write_file", "args": args}]}


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_shell", "args": {"command": command}}]}


VERSIONS = [f"version {i}\n" for i in range(1, 5)]
FOUR_WRITES = [write("notes.txt", VERSIONS[0]),
               *(write("notes.txt", VERSIONS[i], VERSIONS[i - 1]) for i in range(1, 4)),
               {"text": "wrote version 4"}]


def start(cli: EngineCLI, tmp_path: Path, turns: list[dict[str, Any]],
          name: str = "ws") -> tuple[Path, dict[str, Any]]:
    """A finished scripted run of the coding agent in a fresh folder ``name``."""
    ws = tmp_path / name
    ws.mkdir()
    (ws / "README.md").write_text("a file the run never touches\n")
    script = tmp_path / f"{name}-turns.json"
    script.write_text(json.dumps(turns))
    policy = tmp_path / "policy.yaml"
    policy.write_text("default: allow\n")
    proc = cli("run", MACHINE, "--task", "write the notes", "--workspace", str(ws), "--model",
               f"scripted:{script}", "--approval", "auto", "--policy", str(policy), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ws, json.loads(proc.stdout)


def exec_steps(shown: dict[str, Any]) -> list[int]:
    """The steps that ran tool calls, in order."""
    return [s["step"] for s in shown["steps_detail"] if s["state"] == "exec_tool"]


def resume_with(cli: EngineCLI, tmp_path: Path, run_id: str,
                turns: list[dict[str, Any]]) -> dict[str, Any]:
    script = tmp_path / f"resume-{run_id}.json"
    script.write_text(json.dumps(turns))
    proc = cli("resume", run_id, "--model", f"scripted:{script}", "--approval", "auto",
               "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_a_fork_after_the_second_write_holds_version_2_and_continues_differently(
        cli: EngineCLI, tmp_path: Path) -> None:
    ws, run = start(cli, tmp_path, FOUR_WRITES)
    original = cli.json("show", run["run_id"])
    audit_before = cli.json("audit", run["run_id"])
    tree_before = read_tree(ws)
    assert (ws / "notes.txt").read_text() == VERSIONS[3]
    step = exec_steps(original)[1] + 1  # the step after the second write began

    made = cli.json("fork", run["run_id"], "--step", str(step))

    assert made["forked_from"] == {"run_id": run["run_id"], "step": step}
    assert made["exact"] is True and made["status"] == "interrupted"
    fork_ws = Path(made["workspace"])
    assert fork_ws.parent == ws.parent and fork_ws.name == made["run_id"]
    assert (fork_ws / "notes.txt").read_text() == VERSIONS[1]
    assert (fork_ws / "README.md").read_text() == "a file the run never touches\n"
    shown = cli.json("show", made["run_id"])
    assert shown["status"] == "interrupted" and shown["steps"] == step
    assert shown["forked_from"] == {"run_id": run["run_id"], "step": step}
    assert shown["state"] == original["steps_detail"][step]["state"]
    assert shown["model_calls"] == 2  # the two model calls before the fork point
    assert [s["step"] for s in shown["steps_detail"]] == list(range(step + 1))
    listed = {r["run_id"]: r for r in cli.json("runs")}
    assert listed[made["run_id"]]["forked_from"] == made["forked_from"]
    assert listed[run["run_id"]]["forked_from"] is None
    table = cli("runs").stdout
    assert f"forked from {run['run_id']} at step {step}" in table

    # the continuation repeats the two turns before the fork point, then differs
    other = [*FOUR_WRITES[:2], write("notes.txt", "another ending\n", VERSIONS[1]),
             {"text": "took the other road"}]
    resumed = resume_with(cli, tmp_path, made["run_id"], other)
    assert resumed["status"] == "completed"
    assert (fork_ws / "notes.txt").read_text() == "another ending\n"
    assert cli.json("show", made["run_id"])["final_answer"] == "took the other road"

    # the original: its folder, rows and audit as they were
    assert read_tree(ws) == tree_before
    assert cli.json("audit", run["run_id"]) == audit_before
    again = cli.json("show", run["run_id"])
    assert again["final_answer"] == "wrote version 4"
    assert again["steps_detail"] == original["steps_detail"]
    copied = cli.json("audit", made["run_id"])[:2]  # the decisions before the fork point
    assert [{**a, "run_id": run["run_id"]} for a in copied] == audit_before[:2]


def test_a_fork_of_a_fork_and_show_lists_forkable_steps(cli: EngineCLI,
                                                        tmp_path: Path) -> None:
    ws, run = start(cli, tmp_path, FOUR_WRITES)
    shown = cli.json("show", run["run_id"])
    forkable = {s["step"]: s for s in shown["forkable_steps"]}
    assert set(forkable) == {s["step"] for s in shown["steps_detail"] if s["action"]}
    assert all(s["workspace"] == "exact" for s in forkable.values())
    writes = exec_steps(shown)
    assert forkable[writes[0] + 2]["checkpoint"] == writes[0] + 1  # the snapshot after it

    first = cli.json("fork", run["run_id"], "--step", str(writes[2] + 1))
    assert (Path(first["workspace"]) / "notes.txt").read_text() == VERSIONS[2]
    second = cli.json("fork", first["run_id"], "--step", str(writes[0] + 1), "--workspace",
                      str(tmp_path / "second"))
    assert second["workspace"] == str((tmp_path / "second").resolve())
    assert (tmp_path / "second" / "notes.txt").read_text() == VERSIONS[0]
    assert second["forked_from"] == {"run_id": first["run_id"], "step": writes[0] + 1}
    zero = cli.json("fork", first["run_id"], "--step", "0", "--workspace",
                    str(tmp_path / "zero"))
    assert not (tmp_path / "zero" / "notes.txt").exists()  # created after step 0
    assert zero["state"] == "plan"
    resumed = resume_with(cli, tmp_path, zero["run_id"], FOUR_WRITES)
    assert resumed["status"] == "completed"
    assert (tmp_path / "zero" / "notes.txt").read_text() == VERSIONS[3]
    trace = cli("trace", second["run_id"])
    assert f"forked from run {first['run_id']} at step {writes[0] + 1}" in trace.stdout
    traced = cli.json("trace", second["run_id"])
    assert traced["run"]["forked_from"] == second["forked_from"]
    assert (ws / "notes.txt").read_text() == VERSIONS[3]


def test_a_fork_at_a_step_with_a_shell_change_rebuilds_it(cli: EngineCLI,
                                                          tmp_path: Path) -> None:
    turns = [shell("printf 'shell one\\n' > made.txt"),
             shell("printf 'shell two\\n' >> made.txt; printf 'more\\n' >> README.md"),
             {"text": "done"}]
    ws, run = start(cli, tmp_path, turns)
    assert (ws / "made.txt").read_text() == "shell one\nshell two\n"
    assert (ws / "README.md").read_text().endswith("more\n")
    shown = cli.json("show", run["run_id"])
    first, second = exec_steps(shown)

    between = cli.json("fork", run["run_id"], "--step", str(second))
    assert between["exact"] is True
    rebuilt = Path(between["workspace"])
    assert (rebuilt / "made.txt").read_text() == "shell one\n"
    assert (rebuilt / "README.md").read_text() == "a file the run never touches\n"
    before = cli.json("fork", run["run_id"], "--step", str(first), "--workspace",
                      str(tmp_path / "before"))
    assert before["exact"] is True
    assert sorted(read_tree(tmp_path / "before")) == ["README.md"]


def test_content_too_large_to_keep_is_refused_then_forked_with_allow_partial(
        cli: EngineCLI, tmp_path: Path) -> None:
    big1, big2 = "a" * 150_000 + "\n", "b" * 150_000 + "\n"
    turns = [write("big.txt", big1), write("big.txt", big2, big1),
             write("small.txt", "small\n"), {"text": "done"}]
    _, run = start(cli, tmp_path, turns)
    shown = cli.json("show", run["run_id"])
    writes = exec_steps(shown)
    forkable = {s["step"]: s for s in shown["forkable_steps"]}
    assert forkable[writes[1]]["workspace"] == "partial"
    assert [m["path"] for m in forkable[writes[1]]["not_rebuilt"]] == ["big.txt"]
    assert forkable[writes[1] + 1]["workspace"] == "exact"
    runs_before = [r["run_id"] for r in cli.json("runs")]

    refused = cli("fork", run["run_id"], "--step", str(writes[1]))
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert "big.txt cannot be rebuilt as it was" in refused.stderr
    assert "too large" in refused.stderr and "--allow-partial" in refused.stderr
    assert [r["run_id"] for r in cli.json("runs")] == runs_before  # nothing made
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["traces", "ws"]

    made = cli.json("fork", run["run_id"], "--step", str(writes[1]), "--allow-partial")
    assert made["exact"] is False
    assert [m["path"] for m in made["not_rebuilt"]] == ["big.txt"]
    fork_ws = Path(made["workspace"])
    assert (fork_ws / "big.txt").read_text() == big2  # its latest content, as said
    assert not (fork_ws / "small.txt").exists()  # the rest is as it was


def test_bad_steps_are_one_line_with_exit_code_2(cli: EngineCLI, tmp_path: Path) -> None:
    ws, run = start(cli, tmp_path, FOUR_WRITES)
    shown = cli.json("show", run["run_id"])
    last = shown["steps_detail"][-1]["step"]
    for step, words in ((-1, "has steps 0 to"), (last + 5, "has steps 0 to"),
                        (last + 1, "the run ended there")):
        proc = cli("fork", run["run_id"], "--step", str(step))
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and proc.stderr.count("\n") == 1
    proc = cli("fork", "no-such-run", "--step", "1")
    assert proc.returncode == 2 and "no run" in proc.stderr
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    proc = cli("fork", run["run_id"], "--step", "1", "--workspace", str(occupied))
    assert proc.returncode == 2 and "a new folder" in proc.stderr

    # a file changed outside the run since: the steps before its last change are inexact
    (ws / "notes.txt").write_text("edited by hand\n")
    proc = cli("fork", run["run_id"], "--step", "1")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "notes.txt cannot be rebuilt as it was: its content differs" in proc.stderr
    # the run's folder gone: nothing to fork from, and show says so
    ws.rename(tmp_path / "elsewhere")
    forkable = cli.json("show", run["run_id"])["forkable_steps"]
    assert forkable and {s["workspace"] for s in forkable} == {"missing"}
    proc = cli("fork", run["run_id"], "--step", "1")
    assert proc.returncode == 2 and "is gone" in proc.stderr
    assert [r["run_id"] for r in cli.json("runs")] == [run["run_id"]]


def test_the_python_api_forks_through_runs(tmp_path: Path) -> None:
    import engine

    cli = EngineCLI(ROOT, tmp_path / "engine.db")
    _, run = start(cli, tmp_path, FOUR_WRITES)
    step = exec_steps(cli.json("show", run["run_id"]))[1] + 1
    from engine.store.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "engine.db")  # as if workers had driven it (--backend)
    store.update_config(run["run_id"], {"backend": "temporal", "temporal": {"address": "x"}})
    store.close()
    made = engine.Runs(tmp_path / "engine.db").fork(run["run_id"], step,
                                                    workspace=tmp_path / "api")
    assert isinstance(made, engine.ForkResult) and made.exact
    assert (tmp_path / "api" / "notes.txt").read_text() == VERSIONS[1]
    info = engine.Runs(tmp_path / "engine.db").show(made.run_id)
    assert info.forked_from is not None and info.forked_from.step == step
    original = engine.Runs(tmp_path / "engine.db").show(run["run_id"]).config
    assert info.config == {k: v for k, v in original.items()
                           if k not in ("backend", "temporal")}  # whoever resumes drives it
    assert info.config["approval"] == "auto"
    again = engine.fork(made.run_id, 1, store=tmp_path / "engine.db",
                        workspace=tmp_path / "api2")
    assert again.forked_from.run_id == made.run_id


def test_a_version_6_database_is_upgraded_with_its_runs(cli: EngineCLI, tmp_path: Path) -> None:
    """A database written before child runs and forks (schema 6) is upgraded through both
    migrations (7: the parent link, 8: the fork columns); its runs read back with
    ``forked_from`` null and can be forked."""
    from engine.store.sqlite import SCHEMA_VERSION

    _, run = start(cli, tmp_path, FOUR_WRITES)
    conn = sqlite3.connect(tmp_path / "engine.db")
    conn.execute("DROP INDEX idx_runs_parent")  # back to schema 6: before child runs and forks
    for column in ("fork_step", "forked_from", "parent_step", "parent_run_id"):
        conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    conn.execute("PRAGMA user_version=6")
    conn.commit()
    conn.close()
    (listed,) = cli.json("runs")
    assert listed["forked_from"] is None
    conn = sqlite3.connect(tmp_path / "engine.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    conn.close()
    assert columns[-4:] == ["parent_run_id", "parent_step", "forked_from", "fork_step"]
    made = cli.json("fork", run["run_id"], "--step", "3")
    assert made["forked_from"]["step"] == 3


class PgEngineCLI(EngineCLI):
    """``python -m engine ...`` with ``--store URL`` (a PostgreSQL store) on store commands."""

    def __init__(self, url: str) -> None:
        super().__init__(ROOT, Path("unused.db"))
        self.url = url

    def __call__(self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120,
                 stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "engine", *args]
        if args and args[0] in ("run", "resume", "runs", "show", "audit", "trace", "fork"):
            cmd += ["--store", self.url]
        return subprocess.run(cmd, cwd=self.cwd, env=engine_env(env), capture_output=True,
                              text=True, timeout=timeout, input=stdin)


def test_a_fork_of_a_run_on_postgres(pg_url: str, tmp_path: Path) -> None:
    cli = PgEngineCLI(pg_url)
    ws, run = start(cli, tmp_path, FOUR_WRITES)
    shown = cli.json("show", run["run_id"])
    step = exec_steps(shown)[1] + 1
    made = cli.json("fork", run["run_id"], "--step", str(step))
    assert (Path(made["workspace"]) / "notes.txt").read_text() == VERSIONS[1]
    forked = cli.json("show", made["run_id"])
    assert forked["forked_from"] == {"run_id": run["run_id"], "step": step}
    assert forked["model_calls"] == 2 and forked["status"] == "interrupted"
    assert forked["input_tokens"] < shown["input_tokens"]
    other = [*FOUR_WRITES[:2], write("notes.txt", "postgres ending\n", VERSIONS[1]),
             {"text": "done on postgres"}]
    resumed = resume_with(cli, tmp_path, made["run_id"], other)
    assert resumed["status"] == "completed"
    assert (Path(made["workspace"]) / "notes.txt").read_text() == "postgres ending\n"
    assert (ws / "notes.txt").read_text() == VERSIONS[3]
    assert cli.json("show", run["run_id"])["steps_detail"] == shown["steps_detail"]


def test_fork_from_here_in_the_browser_opens_the_new_run(
        cli: EngineCLI, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The console's "fork from here" on a step: a real ``serve`` process, headless chromium
    (the console tests' fixtures); the click lands on the new run's page, which says where it
    came from."""
    console: Server = request.getfixturevalue("server")
    driver: Any = request.getfixturevalue("browser")
    ws, run = start(cli, tmp_path, FOUR_WRITES)
    step = exec_steps(cli.json("show", run["run_id"]))[1] + 1
    driver.get(f"{console.url}/runs/{run['run_id']}")
    wait_for(lambda: _text(driver, "run-status") == "completed", timeout=60)
    wait_for(lambda: driver.execute_script("return !!document.querySelector('#diagram svg')"),
             timeout=60)
    driver.find_element("css selector",
                        f'#steps tr[data-seq="{step}"] form.fork button').click()
    wait_for(lambda: _text(driver, "forked-from") != "", timeout=60)
    new_id = driver.current_url.rstrip("/").rsplit("/", 1)[1]
    assert new_id != run["run_id"]
    assert f"forked from run {run['run_id']} at step {step}" in _text(driver, "forked-from")
    assert _text(driver, "run-status") == "interrupted"
    driver.save_screenshot(str(ARTIFACTS / "forked.png"))
    shown = cli.json("show", new_id)
    assert shown["forked_from"] == {"run_id": run["run_id"], "step": step}
    assert (Path(shown["workspace"]) / "notes.txt").read_text() == VERSIONS[1]
    assert (ws / "notes.txt").read_text() == VERSIONS[3]
    driver.back()  # the diagram's box is as tall loading as loaded: a click on a step's
    wait_for(lambda: driver.execute_script(  # button never lands on another row
        "return !!document.querySelector('#diagram svg')"), timeout=60)
    heights = driver.execute_script("""
        const d = document.getElementById('diagram'), kept = d.innerHTML, loaded = d.offsetHeight;
        d.innerHTML = 'loading…'; const loading = d.offsetHeight; d.innerHTML = kept;
        return [loaded, loading];""")
    assert heights[0] == heights[1] > 0, heights


def test_a_resumed_fork_of_a_golden_run_replays_without_divergence(cli: EngineCLI,
                                                                   tmp_path: Path) -> None:
    """``replay`` of a fork re-runs the golden task with the fork's own history: the turns
    before the fork point (copied) and its different continuation."""
    import yaml

    golden = ROOT / "golden_tasks" / "demo_fix_test"
    proc = cli("run", MACHINE, "--golden", str(golden), "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(proc.stdout)
    shown = cli.json("show", run["run_id"])
    calls = [s["step"] for s in shown["steps_detail"] if s["state"] == "call_model"]
    made = cli.json("fork", run["run_id"], "--step", str(calls[2]))  # before the edit
    turns = yaml.safe_load((golden / "turns.yaml").read_text())
    turns[2]["tool_calls"][0]["args"]["new"] = "total += item.quantity * item.price\n"
    turns[4]["text"] = "Fixed the other way round."
    resumed = resume_with(cli, tmp_path, made["run_id"], turns)
    assert resumed["status"] == "completed"
    fork_ws = Path(made["workspace"])
    assert "item.quantity * item.price" in (fork_ws / "inventory.py").read_text()
    assert "item.price * item.quantity" in (Path(run["workspace"]) / "inventory.py").read_text()

    replayed = cli("replay", made["run_id"], "--db", str(cli.db), "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    report = json.loads(replayed.stdout)
    assert report["diverged"] is False and report["compared"] == 5


def test_the_fork_form_refuses_cross_site_posts_and_bad_steps(
        cli: EngineCLI, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The console's fork endpoint over plain HTTP: no token or another origin is 403 and
    makes nothing; a bad step is a 409 naming it; the right form is a redirect to the fork."""
    from tests.test_console_web import _request

    console: Server = request.getfixturevalue("server")
    _, run = start(cli, tmp_path, FOUR_WRITES)
    url = f"{console.url}/runs/{run['run_id']}/fork"
    page = _request(f"{console.url}/runs/{run['run_id']}")[1]
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    assert _request(url, data=b"step=3")[0] == 403
    evil = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
    assert _request(url, data=f"step=3&csrf={csrf}".encode(), headers=evil)[0] == 403
    assert _request(url, data=f"step=x&csrf={csrf}".encode())[0] == 400
    status, body = _request(url, data=f"step=999&csrf={csrf}".encode())
    assert status == 409 and "--step 999" in body
    assert [r["run_id"] for r in cli.json("runs")] == [run["run_id"]]
    status, body = _request(url, data=f"step=3&csrf={csrf}".encode())
    assert status == 200 and "forked from run" in body  # the redirect, followed
    assert len(cli.json("runs")) == 2


@pytest.mark.parametrize(("old", "new"), [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb", "a\nb\n"),
    ("a\nb\n", "a\nb"),
    ("one\n", "two"),
    ("", "fresh\n"),
    ("x\r\ny\r\n", "x\r\nz\r\n"),
    ("\n".join(f"line {i}" for i in range(200)) + "\n",
     "\n".join(f"line {i}" if i % 50 else f"changed {i}" for i in range(200)) + "\n"),
])
def test_a_recorded_change_is_undone_exactly(old: str, new: str) -> None:
    """``undo`` gives back the content before a change from its diff, proven by its hashes."""
    from engine.forks.patches import NotUndone, sha256, undo
    from turnstile_tools.patch import make_patch

    change = {"path": "f", "base_hash": sha256(old.encode()), "result_hash": sha256(new.encode()),
              "created": False, "patch": make_patch("f", old, new)}
    assert undo(new.encode(), change) == old.encode()
    with pytest.raises(NotUndone, match="differs"):
        undo(new.encode() + b"!", change)
    with pytest.raises(NotUndone, match="too large"):
        undo(new.encode(), {**change, "patch_truncated": True})
    deleted = {"path": "f", "base_hash": sha256(old.encode()), "result_hash": None,
               "deleted": True, "created": False,
               "patch": make_patch("f", old, "").replace("+++ b/f", "+++ /dev/null", 1)}
    assert undo(None, deleted) == old.encode()
    created = {"path": "f", "base_hash": None, "result_hash": sha256(new.encode()),
               "created": True}
    assert undo(new.encode(), created) is None
