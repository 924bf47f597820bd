"""Tool versioning rule: a built-in tool's input schema never changes without a version bump.

``tests/tool_schemas.json`` snapshots every built-in's version and schema hash. When a schema
changes: bump the tool's ``version``, add a changelog line starting with the new version, then
refresh the snapshot with

    TURNSTILE_UPDATE_TOOL_SCHEMAS=1 .venv/bin/pytest tests/test_tools_schemas.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from turnstile_tools import builtin_specs

SNAPSHOT = Path(__file__).with_name("tool_schemas.json")
UPDATE_ENV = "TURNSTILE_UPDATE_TOOL_SCHEMAS"
HOW = f"{UPDATE_ENV}=1 .venv/bin/pytest tests/test_tools_schemas.py"


def current() -> dict[str, dict[str, str]]:
    return {s.name: {"version": s.version, "schema_hash": s.schema_hash} for s in builtin_specs()}


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def test_schema_changes_bump_the_version() -> None:
    now = current()
    if os.environ.get(UPDATE_ENV):
        SNAPSHOT.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n")
    recorded = json.loads(SNAPSHOT.read_text())
    problems = []
    for name, entry in now.items():
        old = recorded.get(name)
        if old is None:
            problems.append(f"{name}: new tool, not in the snapshot; run {HOW}")
        elif entry["schema_hash"] != old["schema_hash"] and entry["version"] == old["version"]:
            problems.append(f"{name}: input schema changed but version is still "
                            f"{entry['version']}; bump the version, add a changelog line, "
                            f"then run {HOW}")
        elif entry != old:
            problems.append(f"{name}: version {old['version']} -> {entry['version']} is not in "
                            f"the snapshot; run {HOW}")
        elif version_tuple(entry["version"]) < version_tuple(old["version"]):
            problems.append(f"{name}: version went down")
    problems += [f"{name}: in the snapshot but no longer a built-in; run {HOW}"
                 for name in sorted(set(recorded) - set(now))]
    assert not problems, "\n".join(problems)


def test_changelog_names_the_current_version() -> None:
    for spec in builtin_specs():
        assert any(line.startswith(f"{spec.version}: ") for line in spec.changelog), (
            f"{spec.name} {spec.version}: add a changelog line starting with '{spec.version}: '")


def test_schemas_are_closed_json_objects() -> None:
    for spec in builtin_specs():
        schema = spec.input_schema
        assert schema["type"] == "object" and schema.get("additionalProperties") is False
        assert json.loads(json.dumps(schema)) == schema
