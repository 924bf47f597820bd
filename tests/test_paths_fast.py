"""The fast paths of judge_path and read_file: the same answers as full resolution, and no way
out through a symbolic link at any component, whenever it appears.

``judge_literal(path, ws, cwd=ws)`` never takes the fast path, so it is the reference the fast
answer is compared with on real trees.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.permissions.paths import (
    SENSITIVE_DIRS,
    SENSITIVE_NAMES,
    _sensitive_parts,
    components_below,
    judge_literal,
    judge_path,
)
from engine.permissions.policy import PolicyContext, _json_preview, decide
from engine.tooling import ToolContext, ToolRegistry, ToolResult
from engine.tooling.invoke import invoke
from engine.vocabulary.state import ToolCall
from turnstile_tools import builtin_specs
from turnstile_tools.workspace import open_in, resolve_in

SECRET = "SECRET-OUTSIDE"


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """``base/a/b/ws`` with ``notes/item.txt`` inside, and ``outside/notes/item.txt`` beside."""
    ws = tmp_path / "a" / "b" / "ws"
    (ws / "notes" / "deep").mkdir(parents=True)
    (ws / "notes" / "item.txt").write_text("inside\n")
    (ws / "notes" / "deep" / "x.txt").write_text("deep\n")
    (ws / ".env").write_text("K=v\n")
    outside = tmp_path / "outside"
    (outside / "notes").mkdir(parents=True)
    (outside / "notes" / "item.txt").write_text(SECRET + "\n")
    (outside / "item.txt").write_text(SECRET + "\n")
    return {"ws": ws, "outside": outside, "tmp": tmp_path}


def same_as_full_resolution(path: str, ws: Path) -> None:
    for for_write in (False, True):
        assert judge_literal(path, ws, for_write=for_write) == judge_literal(
            path, ws, for_write=for_write, cwd=ws), (path, for_write)


def test_a_plain_path_takes_the_fast_path_and_answers_as_realpath(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    assert components_below("notes/item.txt", ws) == ("notes", "item.txt")
    assert components_below(f"{ws}/notes/deep/x.txt", ws) == ("notes", "deep", "x.txt")
    v = judge_path("notes/item.txt", ws)
    assert (v.inside, v.decision, v.resolved) == (True, "allow", str(ws / "notes" / "item.txt"))
    assert v.resolved == os.path.realpath(ws / "notes" / "item.txt")
    for path in ("notes/item.txt", "notes/deep/x.txt", "notes", ".env", f"{ws}/notes/item.txt",
                 "notes/deep"):
        same_as_full_resolution(path, ws)


@pytest.mark.parametrize("path", ["", ".", "./notes/item.txt", "notes//item.txt",
                                  "notes/item.txt/", "notes/./item.txt", "notes/../notes/item.txt",
                                  "../ws/notes/item.txt", "notes/missing.txt", "missing/dir/x",
                                  "notes/item.txt/below", "/etc/passwd", "/", "~/x"])
def test_paths_that_are_not_plain_or_do_not_exist_are_resolved_in_full(
        tree: dict[str, Path], path: str) -> None:
    ws = tree["ws"]
    assert components_below(path, ws) is None
    same_as_full_resolution(path, ws)


def test_a_sibling_sharing_the_workspace_prefix_is_not_below_it(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    evil = ws.parent / "ws-evil"
    evil.mkdir()
    (evil / "x").write_text("x")
    assert components_below(f"{evil}/x", ws) is None
    v = judge_path(f"{evil}/x", ws)
    assert (v.inside, v.decision) == (False, "ask")


def _link_out(ws: Path, outside: Path, link: str) -> None:
    """Replace ``ws/link`` (a component of ``notes/deep/x.txt``) by a symbolic link to a copy
    outside the workspace, where ``notes/deep/x.txt`` then leads to a file holding SECRET."""
    victim, target = ws / link, outside / "t"
    if victim.is_dir():
        victim.rename(target)
        secret = target / Path("notes/deep/x.txt").relative_to(link)
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text(SECRET)
    else:
        target.write_text(SECRET)
        victim.unlink()
    victim.symlink_to(target)


@pytest.mark.parametrize("link", ["notes", "notes/deep", "notes/deep/x.txt"])
def test_a_symlink_at_each_component_of_the_path_leaves_the_fast_path(
        tree: dict[str, Path], link: str) -> None:
    ws = tree["ws"]
    _link_out(ws, tree["outside"], link)
    path = "notes/deep/x.txt"
    assert components_below(path, ws) is None
    v = judge_path(path, ws)
    assert (v.inside, v.decision) == (False, "ask"), v
    assert judge_path(path, ws, for_write=True).decision == "deny"
    same_as_full_resolution(path, ws)


def test_a_symlink_that_stays_inside_is_followed_like_realpath(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    (ws / "alias").symlink_to(ws / "notes")
    assert components_below("alias/item.txt", ws) is None
    v = judge_path("alias/item.txt", ws)
    assert (v.inside, v.decision, v.resolved) == (True, "allow", str(ws / "notes" / "item.txt"))


def _swap_ancestor_for_a_decoy(tree: dict[str, Path], depth: int) -> None:
    """Move the workspace (depth 0) or its ``depth``-th parent away and put a link in its
    place to a copy whose ``notes/item.txt`` holds ``SECRET``."""
    ws, tmp = tree["ws"], tree["tmp"]
    ancestor = ws if depth == 0 else ws.parents[depth - 1]
    ancestor.rename(tmp / "moved")
    decoy = tmp / "decoy" / ws.relative_to(ancestor)
    (decoy / "notes").mkdir(parents=True)
    (decoy / "notes" / "item.txt").write_text(SECRET)
    ancestor.symlink_to(tmp / "decoy")


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_an_ancestor_of_the_workspace_turned_into_a_symlink_is_caught(
        tree: dict[str, Path], depth: int) -> None:
    """The workspace's own resolution is remembered; its components are still checked on
    every call, so a directory above it replaced by a link is seen at once."""
    ws = tree["ws"]
    assert judge_path("notes/item.txt", ws).decision == "allow"  # remembered from here on
    _swap_ancestor_for_a_decoy(tree, depth)
    assert components_below("notes/item.txt", ws) is None
    v = judge_path("notes/item.txt", ws)
    assert (v.inside, v.decision) == (False, "ask"), v


def test_a_known_workspace_costs_one_stat_then_an_lstat_per_component_below(
        tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Once its ancestors were seen to be no links, the workspace is checked by one ``stat``
    that must reach the same directory; only the components below it are ``lstat``ed."""
    ws = tree["ws"]
    assert components_below("notes/deep/x.txt", ws) == ("notes", "deep", "x.txt")
    root = os.path.realpath(ws)
    calls: list[str] = []
    real_stat, real_lstat = os.stat, os.lstat
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: calls.append(f"stat {p}") or
                        real_stat(p, *a, **k))
    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: calls.append(f"lstat {p}") or
                        real_lstat(p, *a, **k))
    assert components_below("notes/deep/x.txt", ws) == ("notes", "deep", "x.txt")
    assert calls == [f"stat {root}", f"lstat {root}/notes", f"lstat {root}/notes/deep",
                     f"lstat {root}/notes/deep/x.txt"]


def test_a_workspace_replaced_by_another_directory_is_checked_in_full_again(
        tree: dict[str, Path]) -> None:
    """The same name, a different directory (moved away and made anew, no link anywhere): the
    new one is proven like the first and its own files are judged inside."""
    ws = tree["ws"]
    assert components_below("notes/item.txt", ws) == ("notes", "item.txt")
    ws.rename(tree["tmp"] / "old-ws")
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "item.txt").write_text("new\n")
    assert components_below("notes/item.txt", ws) == ("notes", "item.txt")
    same_as_full_resolution("notes/item.txt", ws)


@pytest.mark.parametrize("path", ["/proc/self/cwd/notes/item.txt", "/proc/self/root/etc/passwd",
                                  "/dev/fd/0", "/proc/thread-self/fd/1"])
def test_per_process_aliases_are_refused_on_both_paths(tree: dict[str, Path], path: str) -> None:
    ws = tree["ws"]
    assert components_below(path, ws) is None
    assert judge_path(path, ws).decision == "deny"
    (ws / "here").symlink_to("/proc/self/cwd")
    assert judge_path("here/notes/item.txt", ws).decision == "deny"


def test_sensitive_names_match_exactly_as_the_globs_do() -> None:
    rng = random.Random(19)
    alphabet = ["a", ".", "env", "pem", "key", "id_rsa", "_", "-", "p12", "git", "*", "[", "x"]
    names = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
             for _ in range(3000)] + [".env", ".env.x", "a.pem", "id_ed25519.pub", ".netrc"]
    for name in names:
        expected = name in SENSITIVE_DIRS or any(fnmatch.fnmatchcase(name, p)
                                                 for p in SENSITIVE_NAMES)
        assert _sensitive_parts(("dir", name)) is expected, name
    assert _sensitive_parts((".git", "config")) and _sensitive_parts(()) is False


def reference_preview(args: dict[str, object]) -> str:
    text = json.dumps(args, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= 4000 else text[:4000] + "\n... (truncated)"


def test_flat_json_previews_are_byte_for_byte_json_dumps() -> None:
    rng = random.Random(7)
    pieces = ["path", "a\"b", "é", "\n", "\\", "\x01", "\u2028", "😀", "", " ", "k"]
    values: list[object] = [None, True, False, 0, -3, 2**70, 1.5, math.inf, -math.inf, 1e-9]
    for _ in range(2000):
        args: dict[str, object] = {}
        for _ in range(rng.randint(0, 4)):
            key = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
            args[key] = (rng.choice(values) if rng.random() < 0.4 else
                         "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))))
        assert _json_preview(args) == reference_preview(args), args
    for odd in ({"a": [1, 2]}, {"a": {"b": 1}}, {"a": math.nan}, {"x": "y" * 5000},
                {"p": Path("/x")}, {"b": b"x"}):
        assert _json_preview(odd) == reference_preview(odd), odd


def test_decide_on_the_fast_path_equals_decide_on_full_resolution(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    spec = ToolRegistry(builtin_specs()).get("read_file")
    assert spec is not None
    for path in ("notes/item.txt", f"{ws}/notes/deep/x.txt", ".env"):
        fast = decide(ToolCall("c", "read_file", {"path": path}), spec, PolicyContext(ws))
        # the same call judged through a not-yet-resolved spelling of the workspace
        slow = decide(ToolCall("c", "read_file", {"path": path}), spec,
                      PolicyContext(ws / "notes" / ".."))
        assert fast == slow
        assert fast.decision == "allow"


# ---------------------------------------------------------------- read_file


async def read(ws: Path, path: str) -> ToolResult:
    ctx = ToolContext(workspace=ws, call_id="c1")
    return await invoke(ToolRegistry(builtin_specs()), ToolCall("c1", "read_file",
                                                                {"path": path}), ctx)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("link", ["notes", "notes/deep", "notes/deep/x.txt"])
async def test_read_file_refuses_a_symlink_out_at_each_component(
        tree: dict[str, Path], link: str) -> None:
    ws = tree["ws"]
    _link_out(ws, tree["outside"], link)
    assert open_in(ws, "notes/deep/x.txt") is None
    r = await read(ws, "notes/deep/x.txt")
    assert r.is_error and "outside the workspace" in r.content and SECRET not in r.content


@pytest.mark.anyio
async def test_read_file_follows_a_link_that_stays_inside(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    (ws / "alias").symlink_to(ws / "notes")
    r = await read(ws, "alias/item.txt")
    assert not r.is_error and "inside" in r.content
    assert (r.data or {})["path"] == "notes/item.txt"  # named as realpath names it


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["../outside/item.txt", "notes/../../outside/item.txt",
                                  "/proc/self/cwd/notes/item.txt"])
async def test_read_file_refuses_dotdot_and_absolute_escapes(tree: dict[str, Path],
                                                             path: str) -> None:
    r = await read(tree["ws"], path)
    assert r.is_error and SECRET not in r.content


@pytest.mark.anyio
async def test_read_file_of_an_absolute_path_inside(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    r = await read(ws, str(ws.resolve() / "notes" / "item.txt"))
    assert not r.is_error and (r.data or {})["path"] == "notes/item.txt"


@pytest.mark.anyio
async def test_a_pipe_or_a_directory_is_not_opened(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.mkfifo(ws / "pipe")
    assert open_in(ws, "pipe") is None
    r = await read(ws, "pipe")  # would block forever if opened for reading
    assert r.is_error and "not a regular file" in r.content
    r = await read(ws, "notes")
    assert r.is_error and "is a directory" in r.content


@pytest.mark.anyio
async def test_a_symlink_swapped_in_between_the_decision_and_the_read(
        tree: dict[str, Path]) -> None:
    ws, outside = tree["ws"], tree["outside"]
    spec = ToolRegistry(builtin_specs()).get("read_file")
    assert spec is not None
    call = ToolCall("c", "read_file", {"path": "notes/item.txt"})
    assert decide(call, spec, PolicyContext(ws)).decision == "allow"
    (ws / "notes").rename(ws / "notes.away")
    (ws / "notes").symlink_to(outside / "notes")
    r = await read(ws, "notes/item.txt")
    assert r.is_error and "outside the workspace" in r.content and SECRET not in r.content


def test_a_symlink_swapped_in_between_the_tools_check_and_its_open(
        tree: dict[str, Path]) -> None:
    ws, outside = tree["ws"], tree["outside"]
    target = resolve_in(ws, "notes/item.txt")
    assert isinstance(target, Path)
    (ws / "notes").rename(ws / "notes.away")
    (ws / "notes").symlink_to(outside / "notes")
    assert open_in(ws, str(target)) is None  # the checked name now leads outside: not opened


@pytest.fixture
def swapping(tree: dict[str, Path]) -> Iterator[threading.Event]:
    """``ws/d`` flips between a real directory and a link to ``outside/notes`` as fast as
    renames go, until the test ends."""
    ws, outside = tree["ws"], tree["outside"]
    (ws / "d").mkdir()
    (ws / "d" / "item.txt").write_text("inside\n")
    (ws / "evil").symlink_to(outside / "notes")
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            os.rename(ws / "d", ws / "real")
            os.rename(ws / "evil", ws / "d")
            os.rename(ws / "d", ws / "evil")
            os.rename(ws / "real", ws / "d")

    worker = threading.Thread(target=flip, daemon=True)
    worker.start()
    yield stop
    stop.set()
    worker.join()


@pytest.mark.anyio
async def test_read_file_never_reads_outside_while_a_link_is_swapped_in_and_out(
        tree: dict[str, Path], swapping: threading.Event) -> None:
    ws = tree["ws"]
    read_inside = 0
    for _ in range(3000):
        r = await read(ws, "d/item.txt")
        assert SECRET not in r.content, r.content
        read_inside += not r.is_error
    assert read_inside > 0  # the race was run, not refused wholesale


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [0, 1, 2])
async def test_read_file_refuses_when_the_workspace_or_an_ancestor_becomes_a_link(
        tree: dict[str, Path], depth: int) -> None:
    ws = tree["ws"]
    assert not (await read(ws, "notes/item.txt")).is_error  # the workspace is remembered
    _swap_ancestor_for_a_decoy(tree, depth)
    r = await read(ws, "notes/item.txt")
    assert r.is_error and SECRET not in r.content, r.content


@pytest.mark.anyio
async def test_a_workspace_recreated_at_its_name_is_read_as_realpath_would(
        tree: dict[str, Path]) -> None:
    """Another directory now at the resolved name is what ``realpath`` names: it is walked
    from ``/`` instead of trusting the directory remembered."""
    ws, tmp = tree["ws"], tree["tmp"]
    assert "inside" in (await read(ws, "notes/item.txt")).content
    ws.rename(tmp / "old")
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "item.txt").write_text("recreated\n")
    r = await read(ws, "notes/item.txt")
    assert not r.is_error and "recreated" in r.content


@pytest.mark.anyio
async def test_a_nul_byte_is_refused_with_the_usual_message(tree: dict[str, Path]) -> None:
    r = await read(tree["ws"], "notes/item.txt\x00x")
    assert r.is_error and "contains a NUL byte" in r.content


@pytest.mark.anyio
async def test_a_missing_workspace_is_an_error_result(tmp_path: Path) -> None:
    r = await read(tmp_path / "gone", "x.txt")
    assert r.is_error and "no such file" in r.content


def test_write_checks_are_the_same_on_the_fast_path(tree: dict[str, Path]) -> None:
    """Startup files, hooks, hard links out and sensitive files: judged alike both ways."""
    ws, outside = tree["ws"], tree["outside"]
    (ws / ".bashrc").write_text("")
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "hooks" / "pre-commit").write_text("")
    (ws / "keys").mkdir()
    (ws / "keys" / "id_rsa").write_text("")
    os.link(outside / "item.txt", ws / "linked.txt")
    expected = {".bashrc": "deny", ".git/hooks/pre-commit": "deny", "keys/id_rsa": "ask",
                "linked.txt": "deny", ".env": "ask", "notes/item.txt": "allow"}
    for path, decision in expected.items():
        assert components_below(path, ws) is not None, path
        assert judge_literal(path, ws, for_write=True).decision == decision, path
        same_as_full_resolution(path, ws)
