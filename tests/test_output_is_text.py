"""What a command or a model prints reaches the user's terminal as text: an escape sequence
in a command's output (erase the screen and its scrollback, move the cursor up, write the
clipboard) or in a file's name is shown as ``\\x1b``, never obeyed, in the live output and in
``show``. A real run prints through a pipe; the rich console's lines come from the same
``event_lines``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.cli.event_lines import event_lines, visible
from tests.conftest import ROOT, engine_env

MACHINE = ROOT / "machines" / "coding_agent.yaml"
WIPE = "\x1b[H\x1b[2J\x1b[3J\x1b]52;c;ZWNobyBQV05FRA==\x07"


def test_control_characters_are_shown_not_obeyed() -> None:
    assert visible("plain text") == "plain text"
    assert visible(WIPE) == "\\x1b[H\\x1b[2J\\x1b[3J\\x1b]52;c;ZWNobyBQV05FRA==\\x07"
    assert visible("tab\tand\nnewline é") == "tab\tand\nnewline é"
    assert visible("c1 \x9b31m") == "c1 \\x9b31m"
    (line,) = event_lines("tool_output", {"line": f"ok{WIPE}"}) or ()
    assert "\x1b" not in "".join(line[::2])


def test_a_run_and_show_print_a_commands_escapes_as_text(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "wipe.py").write_text(
        "import sys\n"
        f"sys.stdout.write({WIPE!r} + 'all tests pass\\n')\n"
        "open('zz\\r\\x1b[2K\\x1b[1A notes.txt', 'w').write('n')\n")
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([
        {"text": "t", "tool_calls": [{"name": "run_shell", "args": {
            "command": "python3 wipe.py"}}]},
        {"text": "done \x1b[2J"}]))
    db = tmp_path / "e.db"
    run = subprocess.run([sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "t",
                          "--model", f"scripted:{turns}", "--workspace", str(ws),
                          "--approval", "auto", "--db", str(db)], cwd=ROOT, env=engine_env(),
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "\x1b" not in run.stdout and "\\x1b[3J\\x1b]52;c;" in run.stdout, run.stdout
    assert "done \\x1b[2J" in run.stdout
    (listed,) = json.loads(subprocess.run(
        [sys.executable, "-m", "engine", "runs", "--db", str(db), "--json"], cwd=ROOT,
        env=engine_env(), capture_output=True, text=True, check=True).stdout)[:1]
    shown = subprocess.run([sys.executable, "-m", "engine", "show", listed["run_id"], "--db",
                            str(db)], cwd=ROOT, env=engine_env(), capture_output=True,
                           text=True, check=True).stdout
    assert "\x1b" not in shown and "\r" not in shown
    assert "zz\\x0d\\x1b[2K\\x1b[1A notes.txt" in shown, shown
