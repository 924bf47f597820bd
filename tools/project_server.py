"""Turnstile's own MCP server: read and search the files of one project root, nothing else.

Two tools, both annotated read-only, idempotent and closed-world: ``read_project_file(path,
offset, limit)`` and ``search_project_text(pattern, glob, max_results)``. Every path is resolved
(symlinks, ``..``, absolute) and must stay inside the root, compared by components; a symlink
that leads out is refused like any other outside path. Runs over stdio by default or streamable
HTTP on 127.0.0.1 (``--http PORT``, endpoint ``/mcp``).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from engine.vocabulary.errors import UsageError
from engine.vocabulary.globs import GlobError, compile_glob

logger = logging.getLogger(__name__)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
MAX_LIMIT = 5_000
"""Most lines one ``read_project_file`` call returns."""
MAX_RESULTS = 1_000
MAX_FILE_BYTES = 2_000_000
"""Larger files are skipped by search (read them with offset/limit)."""
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__", ".engine",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache"})


def inside(root: Path, path: str) -> Path:
    """``path`` (relative to ``root`` or absolute) resolved, or ``ToolError`` if it leaves root."""
    if "\0" in path:
        raise ToolError("path contains a NUL byte")
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ToolError(f"{path!r} is outside the project root; only files under it are served")
    return target


def _is_text(data: bytes) -> bool:
    return b"\0" not in data[:8192]


def read_file(root: Path, path: str, offset: int, limit: int) -> str:
    """Lines ``offset+1 .. offset+limit`` of a text file under root, numbered."""
    if offset < 0 or not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"offset must be >= 0 and limit between 1 and {MAX_LIMIT}")
    target = inside(root, path)
    if not target.is_file():
        raise ToolError(f"{path!r} is not a file under the project root")
    data = target.read_bytes()
    if not _is_text(data):
        raise ToolError(f"{path!r} is a binary file")
    lines = data.decode("utf-8", errors="replace").splitlines()
    chunk = lines[offset: offset + limit]
    body = "\n".join(f"{offset + i + 1:6}\t{line}" for i, line in enumerate(chunk))
    rest = len(lines) - offset - len(chunk)
    if rest > 0:
        body += f"\n[{rest} more line(s); continue with offset={offset + len(chunk)}]"
    return body or f"[no lines at offset {offset}; the file has {len(lines)} line(s)]"


def glob_regex(glob: str) -> re.Pattern[str]:
    """The project's glob syntax (``engine.vocabulary.globs``: ``**`` spans directories, ``*`` and
    ``?``
    stay within one, ``[...]``, ``{a,b}``); a glob without ``/`` matches file names anywhere
    (like ``rg -g``)."""
    if glob.startswith("/") or ".." in Path(glob).parts:
        raise ToolError(f"glob {glob!r} must be relative to the project root, without '..'")
    try:
        return compile_glob(glob if "/" in glob else "**/" + glob)
    except GlobError as exc:
        raise ToolError(str(exc)) from exc


def project_files(root: Path, glob: str) -> Iterator[tuple[str, Path]]:
    """(relative posix path, file) for files under root matching ``glob``, in sorted order."""
    match = glob_regex(glob)
    for here, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(here) / name
            rel = path.relative_to(root).as_posix()
            if match.match(rel) and path.resolve().is_relative_to(root):
                yield rel, path


def search_text(root: Path, pattern: str, glob: str, max_results: int) -> str:
    """``path:line: text`` for every line matching ``pattern`` (a Python regex)."""
    if not 1 <= max_results <= MAX_RESULTS:
        raise ToolError(f"max_results must be between 1 and {MAX_RESULTS}")
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from exc
    hits: list[str] = []
    for rel, path in project_files(root, glob):
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if not _is_text(data):
            continue
        for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if rx.search(line):
                hits.append(f"{rel}:{n}: {line[:500]}")
                if len(hits) >= max_results:
                    return "\n".join(hits) + f"\n[stopped at max_results={max_results}]"
    return "\n".join(hits) if hits else "no matches"


def build_server(root: Path) -> MCPServer:
    """An ``MCPServer`` serving ``root`` (resolved once, at start)."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise UsageError(f"project root {root} is not a directory")
    server = MCPServer("turnstile-project", version="0.1.0",
                       instructions=f"Read-only access to the project at {base}.")

    @server.tool(annotations=READ_ONLY)
    def read_project_file(path: str, offset: int = 0, limit: int = 2000) -> str:
        """Read a text file of the project: `limit` lines from line `offset` (0-based), numbered.
        `path` is relative to the project root; paths outside it are refused."""
        return read_file(base, path, offset, limit)

    @server.tool(annotations=READ_ONLY)
    def search_project_text(pattern: str, glob: str = "**/*", max_results: int = 100) -> str:
        """Search the project's text files for a regular expression; returns `path:line: text`.
        `glob` filters files (e.g. `*.py`, `src/**/*.ts`); results stop at `max_results`."""
        return search_text(base, pattern, glob, max_results)

    return server


def serve(root: Path, http_port: int | None = None) -> None:
    """Run the server until its client goes away (stdio) or the process is stopped (HTTP)."""
    server = build_server(root)
    if http_port is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=http_port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="project_server", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="project root (default: .)")
    parser.add_argument("--http", type=int, metavar="PORT",
                        help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    args = parser.parse_args(argv)
    try:
        serve(args.root, args.http)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
