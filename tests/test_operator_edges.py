"""The smaller edges an operator meets, through the CLI: a bad ``ENGINE_LOG``, a Postgres
server out of connection slots, a deleted workspace, the database replaced during a run."""

from __future__ import annotations

from tests.conftest import EngineCLI


def test_a_bad_engine_log_is_one_line_and_exit_2(cli: EngineCLI) -> None:
    proc = cli("runs", env={"ENGINE_LOG": "bogus"})
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == ("error: ENGINE_LOG='bogus': expected one of debug, info, warning, "
                           "error, critical\n")
    assert cli("runs", env={"ENGINE_LOG": "info"}).returncode == 0
