"""read_file, list_files, write_file and edit_file on real files, including every refusal."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine.tooling import ToolContext, ToolRegistry, ToolResult
from engine.tooling.invoke import invoke
from engine.vocabulary.state import ToolCall
from turnstile_tools import SEEN_HASHES_KEY, builtin_specs, record_seen
from turnstile_tools.files import dry_run_edit, dry_run_write, replace_exact
from turnstile_tools.patch import apply_diff, make_patch

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None:
        self.items.append((kind, dict(payload)))


async def call(ws: Path, name: str, events: Events | None = None,
               run_data: Mapping[str, Any] | None = None, **args: Any) -> ToolResult:
    ctx = ToolContext(workspace=ws, emit=events or Events(), run_data=run_data or {},
                      call_id="c9")
    return await invoke(ToolRegistry(builtin_specs()), ToolCall("c9", name, args), ctx)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- read_file

async def test_read_file_numbers_lines_and_reports_hash(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("one\ntwo\nthree\n")
    r = await call(tmp_path, "read_file", path="a.txt")
    assert not r.is_error
    assert r.content.splitlines()[:3] == ["     1\tone", "     2\ttwo", "     3\tthree"]
    assert r.data == {"path": "a.txt", "sha256": digest(f), "lines": [1, 3], "total_lines": 3}
    assert digest(f) in r.content


async def test_read_file_offset_limit_and_paging_hint(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"l{i}\n" for i in range(1, 101)))
    r = await call(tmp_path, "read_file", path="big.txt", offset=10, limit=5)
    assert r.content.splitlines()[0] == "    10\tl10"
    assert r.content.splitlines()[4] == "    14\tl14"
    assert "lines 10-14 of 100" in r.content and "offset=15" in r.content
    past = await call(tmp_path, "read_file", path="big.txt", offset=101)
    assert past.is_error and "past the end" in past.content


async def test_read_file_refusals(tmp_path: Path) -> None:
    (tmp_path / "bin.dat").write_bytes(b"\x89PNG\x00\x01\x02")
    (tmp_path / "dir").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    big = tmp_path / "huge.log"
    with big.open("wb") as fh:
        fh.truncate(10_000_001)
    cases = {
        "bin.dat": "binary file",
        "dir": "is a directory",
        "huge.log": "over read_file's 10 MB limit",
        "../outside.txt": "outside the workspace",
        "/etc/passwd": "outside the workspace",
        "note.txt": "did you mean notes.txt?",
    }
    for path, message in cases.items():
        r = await call(tmp_path, "read_file", path=path)
        assert r.is_error and message in r.content, (path, r.content)


class Host:
    """A host's copies of files (an editor's buffers): what ``read_text`` answers, and
    every path it was asked for; a path it has no copy of answers None."""

    def __init__(self, texts: Mapping[Path, str]) -> None:
        self.texts = dict(texts)
        self.asked: list[Path] = []

    async def __call__(self, path: Path) -> str | None:
        self.asked.append(path)
        return self.texts.get(path)


async def read_hosted(ws: Path, host: Host, **args: Any) -> ToolResult:
    ctx = ToolContext(workspace=ws, call_id="c9", read_text=host)
    return await invoke(ToolRegistry(builtin_specs()), ToolCall("c9", "read_file", args), ctx)


async def test_read_file_shows_the_hosts_text_once_the_path_checks_passed(
        tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_bytes(b"one\r\ntwo\r\n")
    (tmp_path / "b.txt").write_text("on disk\n")
    (tmp_path / "bin.dat").write_bytes(b"\x89PNG\x00\x01")
    host = Host({tmp_path / "a.txt": "one\ntwo\n", tmp_path / "b.txt": "in the buffer\n"})
    same = await read_hosted(tmp_path, host, path="a.txt")
    assert same.data == {"path": "a.txt", "sha256": digest(f), "lines": [1, 2],
                         "total_lines": 2}  # the same text (LF for CRLF): the disk's hash
    unsaved = await read_hosted(tmp_path, host, path="b.txt", offset=1, limit=1)
    assert unsaved.content.startswith("     1\tin the buffer\n") and "unsaved" in unsaved.content
    assert unsaved.data is not None and unsaved.data["unsaved"] is True
    assert unsaved.data["sha256"] == hashlib.sha256(b"in the buffer\n").hexdigest()
    for refused in ("../outside.txt", "bin.dat", "missing.txt", "."):
        r = await read_hosted(tmp_path, host, path=refused)
        assert r.is_error, refused
    assert host.asked == [tmp_path / "a.txt", tmp_path / "b.txt"]
    r = await read_hosted(tmp_path, Host({}), path="b.txt")  # no copy: the disk
    assert r.content.startswith("     1\ton disk\n") and "unsaved" not in r.content


async def test_read_file_symlink_escaping_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    r = await call(ws, "read_file", path="link.txt")
    assert r.is_error and "outside the workspace" in r.content


async def test_read_file_empty_and_invalid_arguments(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    r = await call(tmp_path, "read_file", path="e.txt")
    assert not r.is_error and "empty" in r.content
    bad = await call(tmp_path, "read_file", path="e.txt", offset=0, extra=1)
    assert bad.is_error and "offset" in bad.content and "extra" in bad.content


# ---------------------------------------------------------------- list_files

def make_tree(root: Path, files: list[str]) -> None:
    for name in files:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(name)


async def test_list_files_respects_gitignore(tmp_path: Path) -> None:
    make_tree(tmp_path, [
        "src/main.py", "src/app.log", "src/keep.log", "build/out.o", "docs/a/b/c.md",
        "node_modules/x/index.js", "sub/.gitignore", "sub/secret.env", "sub/ok.txt",
        "top.tmp", "deep/top.tmp", "anchored.txt", "deep/anchored.txt", ".git/HEAD",
    ])
    (tmp_path / ".gitignore").write_text(
        "# comment\n*.log\n!keep.log\nbuild/\n/anchored.txt\nnode_modules\n/top.tmp\n")
    (tmp_path / "sub" / ".gitignore").write_text("*.env\n")
    r = await call(tmp_path, "list_files", depth=5)
    listed = set(r.content.splitlines())
    assert {"src/main.py", "src/keep.log", "docs/a/b/c.md", "sub/ok.txt", "deep/top.tmp",
            "deep/anchored.txt", "src/", "sub/.gitignore", ".gitignore"} <= listed
    for hidden in ("src/app.log", "build/", "build/out.o", "anchored.txt", "top.tmp",
                   "node_modules/", "sub/secret.env", ".git/", ".git/HEAD"):
        assert hidden not in listed, hidden


async def test_list_files_depth_limit_and_truncation(tmp_path: Path) -> None:
    make_tree(tmp_path, ["a/b/c/d.txt"] + [f"f{i:03}.txt" for i in range(30)])
    shallow = await call(tmp_path, "list_files", depth=1)
    assert "a/" in shallow.content.splitlines() and "a/b/" not in shallow.content
    limited = await call(tmp_path, "list_files", limit=10)
    assert limited.truncated and len(limited.content.splitlines()) == 11
    assert "showing 10 of 33 entries" in limited.content  # d.txt is at depth 4
    assert limited.data is not None and limited.data["total"] == 33


async def test_list_files_subdirectory_uses_parent_rules(tmp_path: Path) -> None:
    make_tree(tmp_path, ["pkg/a.py", "pkg/a.pyc", "pkg/inner/b.pyc", "pkg/inner/b.py"])
    (tmp_path / ".gitignore").write_text("**/*.pyc\n")
    r = await call(tmp_path, "list_files", path="pkg")
    assert r.content.splitlines() == ["pkg/a.py", "pkg/inner/", "pkg/inner/b.py"]
    file_given = await call(tmp_path, "list_files", path="pkg/a.py")
    assert file_given.is_error and "read_file" in file_given.content


async def test_list_files_outside_workspace(tmp_path: Path) -> None:
    r = await call(tmp_path, "list_files", path="..")
    assert r.is_error and "outside the workspace" in r.content


# ---------------------------------------------------------------- write_file

async def test_write_file_creates_with_parents_and_reports(tmp_path: Path) -> None:
    ev = Events()
    r = await call(tmp_path, "write_file", ev, path="new/dir/f.py", content="print(1)\n")
    f = tmp_path / "new" / "dir" / "f.py"
    assert not r.is_error and f.read_text() == "print(1)\n"
    assert r.data is not None and r.data["created"] is True and r.data["base_hash"] is None
    assert r.data["result_hash"] == digest(f)
    assert r.data["patch"].startswith("--- /dev/null\n+++ b/new/dir/f.py\n")
    kinds = [k for k, _ in ev.items]
    assert kinds == ["file_changed"] and ev.items[0][1]["result_hash"] == digest(f)
    assert not [p for p in f.parent.iterdir() if p.name != "f.py"]  # no temp files left


async def test_write_file_overwrite_needs_matching_base_hash(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("v1\n")
    blind = await call(tmp_path, "write_file", path="f.txt", content="v2\n")
    assert blind.is_error and "read it first" in blind.content and f.read_text() == "v1\n"
    read = await call(tmp_path, "read_file", path="f.txt")
    assert read.data is not None
    base = read.data["sha256"]
    f.write_text("changed by someone else\n")
    stale = await call(tmp_path, "write_file", path="f.txt", content="v2\n", base_hash=base)
    assert stale.is_error and "changed since you read it" in stale.content
    assert f.read_text() == "changed by someone else\n"
    ok = await call(tmp_path, "write_file", path="f.txt", content="v2\n", base_hash=digest(f))
    assert not ok.is_error and f.read_text() == "v2\n"
    assert ok.data is not None and "-changed by someone else\n+v2" in ok.data["patch"]


async def test_write_file_uses_hashes_the_runner_remembers(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("v1\n")
    read = await call(tmp_path, "read_file", path="f.txt")
    seen = record_seen({}, read)
    assert seen == {"f.txt": digest(f)}
    ok = await call(tmp_path, "write_file", run_data={SEEN_HASHES_KEY: seen}, path="f.txt",
                    content="v2\n")
    assert not ok.is_error
    seen = record_seen(seen, ok)
    assert seen["f.txt"] == digest(f)
    f.write_text("external\n")
    stale = await call(tmp_path, "write_file", run_data={SEEN_HASHES_KEY: seen}, path="f.txt",
                       content="v3\n")
    assert stale.is_error and f.read_text() == "external\n"


async def test_write_file_keeps_mode_and_refuses_outside(tmp_path: Path) -> None:
    f = tmp_path / "run.sh"
    f.write_text("#!/bin/sh\n")
    f.chmod(0o755)
    r = await call(tmp_path, "write_file", path="run.sh", content="#!/bin/sh\necho\n",
                   base_hash=digest(f))
    assert not r.is_error and f.stat().st_mode & 0o777 == 0o755
    out = await call(tmp_path, "write_file", path="../escape.txt", content="x")
    assert out.is_error and not (tmp_path.parent / "escape.txt").exists()
    gone = await call(tmp_path, "write_file", path="nope.txt", content="x", base_hash="0" * 64)
    assert gone.is_error and "does not exist" in gone.content


# ---------------------------------------------------------------- edit_file

async def test_edit_file_exact_replacement_returns_diff(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    return 1\n")
    ev = Events()
    r = await call(tmp_path, "edit_file", ev, path="m.py", old="return 1", new="return 2")
    assert not r.is_error and f.read_text() == "def f():\n    return 2\n"
    assert "-    return 1\n+    return 2" in r.content
    assert r.data is not None and r.data["base_hash"] != r.data["result_hash"] == digest(f)
    assert ev.items[0][0] == "file_changed" and ev.items[0][1]["tool"] == "edit_file"


async def test_edit_file_match_errors(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("x = 1\nx = 1\ny = 22\n")
    many = await call(tmp_path, "edit_file", path="m.py", old="x = 1", new="x = 3")
    assert many.is_error and "occurs 2 times (lines 1, 2)" in many.content
    none = await call(tmp_path, "edit_file", path="m.py", old="y = 2 ", new="y = 3")
    assert none.is_error and "not found" in none.content and "closest line: 3" in none.content
    assert f.read_text() == "x = 1\nx = 1\ny = 22\n"
    both = await call(tmp_path, "edit_file", path="m.py", old="x = 1", new="x = 3",
                      replace_all=True)
    assert not both.is_error and f.read_text() == "x = 3\nx = 3\ny = 22\n"
    mixed = await call(tmp_path, "edit_file", path="m.py", old="a", new="b", diff="@@")
    assert mixed.is_error and "not both" in mixed.content
    missing = await call(tmp_path, "edit_file", path="absent.py", old="a", new="b")
    assert missing.is_error and "write_file" in missing.content


async def test_edit_file_base_hash_conflict_leaves_file_untouched(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    read = await call(tmp_path, "read_file", path="m.py")
    seen = record_seen({}, read)
    f.write_text("a = 1\nb = 2\n")  # changed between read and edit
    r = await call(tmp_path, "edit_file", run_data={SEEN_HASHES_KEY: seen}, path="m.py",
                   old="a = 1", new="a = 5")
    assert r.is_error and "changed since you read it" in r.content
    assert r.data is not None and r.data["conflict"] is True
    assert f.read_text() == "a = 1\nb = 2\n"
    explicit = await call(tmp_path, "edit_file", path="m.py", old="a = 1", new="a = 5",
                          base_hash=seen["m.py"])
    assert explicit.is_error and f.read_text() == "a = 1\nb = 2\n"


async def test_edit_file_with_unified_diff(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    diff = ("--- a/m.py\n+++ b/m.py\n"
            "@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE FIVE\n line 6\n"
            "@@ -30,2 +30,3 @@\n line 15\n+inserted\n line 16\n")  # second hunk: wrong numbers
    r = await call(tmp_path, "edit_file", path="m.py", diff=diff)
    assert not r.is_error, r.content
    text = f.read_text()
    assert "LINE FIVE\nline 6" in text and "line 15\ninserted\nline 16" in text
    bad = ("@@ -1,2 +1,2 @@\n line 1\n-line 3\n+x\n")
    nope = await call(tmp_path, "edit_file", path="m.py", diff=bad)
    assert nope.is_error and "hunk 1" in nope.content and "line 2" in nope.content
    assert f.read_text() == text
    other = await call(tmp_path, "edit_file", path="m.py",
                       diff="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-line 1\n+y\n")
    assert other.is_error and "is for 'x.py'" in other.content


async def test_edit_file_refuses_binary(tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"a\x00b")
    r = await call(tmp_path, "edit_file", path="b.bin", old="a", new="c")
    assert r.is_error and "binary" in r.content


def test_dry_run_plans_the_change_without_writing(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = 1\n")
    ctx = ToolContext(workspace=tmp_path)
    edit = dry_run_edit({"path": "m.py", "old": "1", "new": "2"}, ctx)
    assert not isinstance(edit, ToolResult)
    assert "-a = 1\n+a = 2" in edit[0].patch and edit[0].after == b"a = 2\n"
    assert edit[0].base_hash == digest(f)
    new = dry_run_write({"path": "n.py", "content": "x\n"}, ctx)
    assert not isinstance(new, ToolResult)
    assert new[0].before is None and not (tmp_path / "n.py").exists()
    blind = dry_run_write({"path": "m.py", "content": "x\n"}, ctx)
    assert isinstance(blind, ToolResult) and blind.is_error and "read it first" in blind.content
    bad = dry_run_edit({"path": "m.py"}, ctx)
    assert isinstance(bad, ToolResult) and "invalid arguments" in bad.content
    assert f.read_text() == "a = 1\n"


def test_replace_exact_crlf_and_non_utf8_roundtrip() -> None:
    assert replace_exact("a\r\nb\r\n", "a\nb", "c\nd") == "c\r\nd\r\n"
    raw = b"caf\xe9 = 1\n".decode("utf-8", "surrogateescape")
    out = replace_exact(raw, "= 1", "= 2").encode("utf-8", "surrogateescape")
    assert out == b"caf\xe9 = 2\n"


@pytest.mark.parametrize(("old", "new"), [
    ("a\nb\nc\n", "a\nc\n"),
    ("a\nb", "a\nb\n"),
    ("a\nb\n", "a\nb"),
    ("", "x\n"),
    ("x\n", ""),
    ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "0\n1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n"),
    ("a\r\nb\r\n", "a\r\nB\r\n"),
    ("form\x0cfeed\nz\n", "form\x0cfeed\nZ\n"),
])
def test_patch_roundtrip(old: str, new: str) -> None:
    assert apply_diff(old, make_patch("f", old, new)) == new


def test_patch_ambiguous_hunk_is_refused() -> None:
    text = "x\ny\nx\ny\n"
    with pytest.raises(ValueError, match="matches at lines 1, 3"):
        apply_diff(text, "@@ -9,2 +9,2 @@\n x\n-y\n+z\n")
    with pytest.raises(ValueError, match="no hunks"):
        apply_diff(text, "just text")
    with pytest.raises(ValueError, match="not part of a hunk"):
        apply_diff(text, "@@ -1,2 +1,2 @@\n x\n-y\n+z\n?garbage\n")


@pytest.mark.parametrize("expected_size", [0, 4, 9, 10, 11, 64])
def test_read_all_returns_the_whole_file_whatever_size_was_expected(
        tmp_path: Path, expected_size: int) -> None:
    """A file that grew or shrank since it was looked at is read in full, up to its end;
    the expected size only decides how much the first read asks for."""
    from turnstile_tools.files import _read_all

    body = b"0123456789" * (1 + expected_size % 3)
    path = tmp_path / "f.txt"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_all(fd, expected_size) == body
    finally:
        os.close(fd)
