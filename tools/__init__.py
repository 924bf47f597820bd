"""The built-in tools: ``builtin_specs()`` is the whole set a machine can name.

Versioning rule: a change of a tool's behaviour or input schema bumps its ``version`` and adds a
changelog line starting with the new version (``"1.1.0: ..."``). ``tests/test_tools_schemas.py``
fails when a schema changes without a version bump; after bumping, refresh the snapshot with
``TURNSTILE_UPDATE_TOOL_SCHEMAS=1 .venv/bin/pytest tests/test_tools_schemas.py``.
"""

from __future__ import annotations

from engine.tooling.spec import SEEN_HASHES_KEY, ToolSpec
from turnstile_tools import files, plan, search, shell
from turnstile_tools.files import record_seen
from turnstile_tools.plan import PLAN_KEY

BUILTIN_NAMES: tuple[str, ...] = (
    "read_file", "list_files", "search_text", "write_file", "edit_file", "run_shell",
    "update_plan",
)


def builtin_specs() -> list[ToolSpec]:
    """Every built-in tool's spec, in ``BUILTIN_NAMES`` order."""
    by_name = {s.name: s for s in (*files.SPECS, search.SPEC, shell.SPEC, plan.SPEC)}
    return [by_name[name] for name in BUILTIN_NAMES]


__all__ = [
    "BUILTIN_NAMES", "PLAN_KEY", "SEEN_HASHES_KEY", "builtin_specs", "record_seen",
]
