"""search_text on real trees: regex, globs, context, caps, .gitignore, binary files, errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.tooling import ToolContext, ToolRegistry, ToolResult
from engine.tooling.invoke import invoke
from engine.vocabulary.state import ToolCall
from engine.workspace.ignore import glob_regex, parse_rules
from turnstile_tools import builtin_specs
from turnstile_tools.search import expand_braces, glob_filter

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def search(ws: Path, **args: Any) -> ToolResult:
    ctx = ToolContext(workspace=ws, call_id="s1")
    return await invoke(ToolRegistry(builtin_specs()), ToolCall("s1", "search_text", args), ctx)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, body in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            p.write_bytes(body)
        else:
            p.write_text(body)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(tmp_path, {
        ".gitignore": "dist/\n*.min.js\n",
        "src/app.py": "import os\n\ndef handler(request):\n    return Response(request)\n",
        "src/util.py": "def helper():\n    pass\n# handler is elsewhere\n",
        "src/web/page.ts": "export function handler() {}\n",
        "src/web/page.tsx": "const Handler = () => null;\n",
        "dist/bundle.py": "def handler(): ...\n",
        "lib/x.min.js": "function handler(){}\n",
        "data/blob.bin": b"handler\x00\x01\x02",
        "notes/caf\u00e9.md": "un caf\u00e9 cr\u00e8me\nhandler caf\u00e9\n",
    })
    return tmp_path


async def test_matches_are_path_line_text_and_respect_gitignore(tree: Path) -> None:
    r = await search(tree, pattern=r"def handler\(")
    assert r.content.splitlines()[0] == "src/app.py:3:def handler(request):"
    assert "dist/" not in r.content and "x.min.js" not in r.content
    assert r.data is not None and r.data["matches"] == 1


async def test_binary_files_are_skipped_and_counted(tree: Path) -> None:
    r = await search(tree, pattern="handler")
    assert "blob.bin" not in r.content and "skipped 1 binary" in r.content


async def test_glob_filters(tree: Path) -> None:
    py = await search(tree, pattern="handler", glob="*.py")
    assert {line.split(":")[0] for line in py.content.splitlines()[:-1]} == {
        "src/app.py", "src/util.py"}
    ts = await search(tree, pattern="(?i)handler", glob="src/**/*.{ts,tsx}")
    assert {line.split(":")[0] for line in ts.content.splitlines()[:-1]} == {
        "src/web/page.ts", "src/web/page.tsx"}


async def test_case_insensitive_and_non_ascii(tree: Path) -> None:
    sensitive = await search(tree, pattern="Handler", glob="*.tsx")
    insensitive = await search(tree, pattern="HANDLER", glob="*.tsx", case_sensitive=False)
    assert sensitive.data is not None and sensitive.data["matches"] == 1
    assert insensitive.data is not None and insensitive.data["matches"] == 1
    accent = await search(tree, pattern=r"caf[é]\s+cr", path="notes")
    assert accent.content.splitlines()[0] == "notes/café.md:1:un café crème"


async def test_context_lines_and_separators(tmp_path: Path) -> None:
    write(tmp_path, {"f.txt": "".join(f"{i}\n" for i in range(1, 31))})
    r = await search(tmp_path, pattern=r"^(5|7|20)$", context=1)
    assert r.content.splitlines()[:-1] == [
        "f.txt-4-4", "f.txt:5:5", "f.txt-6-6", "f.txt:7:7", "f.txt-8-8", "--",
        "f.txt-19-19", "f.txt:20:20", "f.txt-21-21"]


async def test_result_cap_counts_omitted_matches(tmp_path: Path) -> None:
    write(tmp_path, {f"d/f{i}.txt": "hit\nhit\n" for i in range(10)})
    r = await search(tmp_path, pattern="hit", max_results=5)
    assert len(r.content.splitlines()) == 6 and r.truncated
    assert r.data is not None and r.data["matches"] == 20 and r.data["omitted_matches"] == 15
    assert "(truncated: 15 of 20 matching lines" in r.content


async def test_errors_and_empty_results(tree: Path) -> None:
    bad = await search(tree, pattern="handler(")
    assert bad.is_error and "invalid regular expression" in bad.content
    outside = await search(tree, pattern="x", path="..")
    assert outside.is_error and "outside the workspace" in outside.content
    missing = await search(tree, pattern="x", path="nope")
    assert missing.is_error and "no such file" in missing.content
    none = await search(tree, pattern="zzz_not_there")
    assert not none.is_error and none.content.startswith("no matches")
    single = await search(tree, pattern="helper", path="src/util.py")
    assert single.content.splitlines()[0] == "src/util.py:1:def helper():"


async def test_search_propagates_cancellation(tmp_path: Path) -> None:
    write(tmp_path, {f"d{i // 100}/f{i}.txt": "x\n" for i in range(3000)})
    with anyio.move_on_after(0.0001) as scope:
        await search(tmp_path, pattern="x")
    assert scope.cancelled_caught


def test_glob_translation() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    f = glob_filter("*.py")
    assert f is not None and f.fullmatch("a/b/c.py") and not f.fullmatch("a/b/c.pyc")
    assert glob_filter(None) is None
    rx = re.compile(glob_regex("a/**/b"))
    assert rx.fullmatch("a/b") and rx.fullmatch("a/x/y/b") and not rx.fullmatch("a/xb")
    assert re.fullmatch(glob_regex("[!a]?.txt"), "bc.txt")
    assert not re.fullmatch(glob_regex("[!a]?.txt"), "ac.txt")


def test_gitignore_line_syntax() -> None:
    rules = parse_rules("# c\n\n\\#lit\n\\!bang\n!neg\ndir/\n/root\na/b\ntrail\\ \n")
    assert [(r.negated, r.dir_only, r.anchored) for r in rules] == [
        (False, False, False), (False, False, False), (True, False, False),
        (False, True, False), (False, False, True), (False, False, True),
        (False, False, False)]
    assert rules[0].regex.fullmatch("#lit") and rules[1].regex.fullmatch("!bang")
    assert rules[6].regex.fullmatch("trail ")
