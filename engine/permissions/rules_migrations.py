"""Rules for schema migration tools: goose, dbmate and Flyway.

Each is told a verb among its words (``goose -dir db/migrations postgres "$DSN" status``):
checking the migration files reads; asking the database where it stands talks to it; applying
migrations changes it; rolling them back, resetting, dropping or cleaning destroys what the
tables held. A verb the table does not name is asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.permissions.effect import Effect, Rule, prog
from engine.permissions.words import Word

_F = frozenset


@dataclass(frozen=True, slots=True)
class Verbs:
    """What one tool's verbs do."""

    local: frozenset[str] = _F()
    """Read the migration files only (``goose validate``)."""
    queries: frozenset[str] = _F()
    """Ask the database where it stands (``goose status``): a connection, nothing changed."""
    teardown: frozenset[str] = _F()
    """Undo migrations or empty the database: what the tables held is lost."""


TOOLS: dict[str, Verbs] = {
    "goose": Verbs(_F({"validate", "help", "-version", "--version"}), _F({"status", "version"}),
                   _F({"down", "down-to", "reset"})),
    "dbmate": Verbs(_F({"--help", "-h", "--version", "-v"}), _F({"status"}),
                    _F({"down", "rollback", "drop"})),
    "flyway": Verbs(_F({"-v", "version", "--version", "help"}), _F({"info", "validate"}),
                    _F({"clean", "undo"})),
}
"""Per tool: its verbs that read the files, ask the database, or tear down."""


def _migration_rule(name: str) -> Rule:
    verbs = TOOLS[name]
    known = verbs.local | verbs.queries | verbs.teardown

    def rule(e: Effect, args: list[Word]) -> None:
        words = [w.value for w in args]
        verb = next((w for w in words if w in known), None)
        if None in words and verb not in verbs.teardown:
            e.add("exec", f"{prog(e)} with words only known at run time may change the "
                          "database")
        elif verb in verbs.teardown:
            e.add("destructive", f"{prog(e)} {verb} undoes migrations or empties the "
                                 "database: what the tables held is lost")
        elif verb in verbs.queries:
            e.add("network", f"{prog(e)} {verb} asks the database where it stands")
        elif verb not in verbs.local:
            e.add("write", f"{prog(e)} applies migrations or writes migration files")

    return rule


RULES: dict[str, Rule] = {name: _migration_rule(name) for name in TOOLS}
