"""A policy edited while a run is parked, through the CLI on a real SQLite file.

A person's decision is bound to the policy version it was made under. If the policy still asks
about the call, the call is asked again (``approve --resume`` says so and exits 5; the second
approval runs it, once); if the changed policy denies it by itself, the denial names the change
and ``approve --resume`` reports that the call was not run. Each decision is one audit row.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EngineCLI
from tests.test_park import inventory, make_task, park, pending

STILL_ASKS = """\
default: deny
rules:
  - {decision: allow, tool: read_file}
  - {decision: ask, tool: edit_file, path: "*.py"}
"""

NOW_DENIES = """\
default: deny
rules:
  - {decision: deny, tool: edit_file, path: "*.py"}
"""


def _decisions(cli: EngineCLI, run_id: str, call_id: str) -> list[tuple[str, str, str]]:
    return [(a["decision"], a["decided_by"], a["reason"]) for a in cli.json("audit", run_id)
            if a["call_id"] == call_id]


def test_a_changed_policy_that_still_asks_asks_again(cli: EngineCLI, tmp_path: Path) -> None:
    task = make_task(tmp_path)
    info = park(cli, task)
    (row,) = pending(cli)
    (task / "policy.yaml").write_text(STILL_ASKS)
    proc = cli("approve", info["run_id"], row["call_id"], "--resume", "--db", str(cli.db))
    assert proc.returncode == 5, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last == (f"call {row['call_id']} (edit_file) was not run: the policy changed since "
                    "it was decided, so it is asked again")
    assert "price * item.quantity" not in inventory(info)
    (again,) = pending(cli)
    assert again["call_id"] == row["call_id"] and again["policy_version"] != \
        row["policy_version"]
    assert [d[:2] for d in _decisions(cli, info["run_id"], row["call_id"])] == [
        ("allow", "cli")]  # the first decision, and nothing in the person's name since
    proc = cli("approve", info["run_id"], row["call_id"], "--resume", "--db", str(cli.db))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == (
        f"call {row['call_id']} (edit_file) ran: done")
    assert inventory(info).count("price * item.quantity") == 1
    assert [d[:2] for d in _decisions(cli, info["run_id"], row["call_id"])] == [
        ("allow", "cli"), ("allow", "cli")]  # two decisions, one row each


def test_a_changed_policy_that_denies_names_the_change(cli: EngineCLI, tmp_path: Path) -> None:
    task = make_task(tmp_path, after_edit="Permission denied")
    info = park(cli, task)
    (row,) = pending(cli)
    (task / "policy.yaml").write_text(NOW_DENIES)
    proc = cli("approve", info["run_id"], row["call_id"], "--resume", "--db", str(cli.db))
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"call {row['call_id']} (edit_file) was not run: ")
    assert "the policy changed since" in last and "approved this call via cli" in last
    assert "price * item.quantity" not in inventory(info)
    decisions = _decisions(cli, info["run_id"], row["call_id"])
    assert [d[:2] for d in decisions] == [("allow", "cli"), ("deny", "policy")]
    assert "the policy changed since" in decisions[1][2]
