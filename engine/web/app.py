"""The console's routes: pages, the event streams, the diagram, and decisions.

Each request opens the store in a worker thread (SQLite in WAL mode: readers never block the
runs that write). Event streams poll the store every ``POLL_S``; a committed step reaches the
page within that, whichever process committed it.
"""

from __future__ import annotations

import getpass
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from engine.store.url import StoreTarget
from engine.tracing.redact import redactor
from engine.vocabulary.errors import StoreError, TurnstileError
from engine.web import views
from engine.web.security import Guard, safe_id, same_origin

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
POLL_S = 0.05
"""How often an event stream looks at the store for new steps and stream events."""
STATUSES = ("running", "waiting_approval", "interrupted", "crashed", "completed", "failed")


class Console:
    """The app's state: where the store is, the token guard, and the runs it resumed."""

    def __init__(self, db: Path | StoreTarget, token: str | None, *, loopback: bool = True,
                 tasks: Path | None = None) -> None:
        self.db = db
        self.token = token
        self.tasks = tasks
        """``--allow-start``: the golden tasks folder the runs page may start runs from."""
        self.resumed: list[threading.Thread] = []
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"),
                               autoescape=select_autoescape(["html"]))
        self.app = Starlette(routes=[
            Route("/", self.index),
            Route("/api/runs", self.api_runs),
            Route("/events/runs", self.runs_events),
            Route("/runs/{run_id}", self.run),
            Route("/runs/{run_id}/diagram.svg", self.diagram),
            Route("/runs/{run_id}/events", self.run_events),
            Route("/runs/{run_id}/fork", self.fork, methods=["POST"]),
            Route("/runs/{run_id}/resume", self.resume, methods=["POST"]),
            Route("/approvals", self.approvals),
            Route("/approvals/{run_id}/{call_id}", self.decide, methods=["POST"]),
            Route("/start", self.start, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ], exception_handlers={StoreError: self._store_down})
        self.guard = Guard(self._no_traversal, token, loopback=loopback)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.guard(scope, receive, send)

    async def _no_traversal(self, scope: Any, receive: Any, send: Any) -> None:
        raw = scope.get("raw_path") or scope.get("path", "").encode()
        lowered = raw.lower()
        if scope["type"] == "http" and (b".." in raw or b"%2e%2e" in lowered
                                        or b"%2f" in lowered or b"%5c" in lowered):
            await PlainTextResponse("400: bad path\n", status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _store_down(self, request: Request, exc: Exception) -> HTMLResponse:
        """A store that cannot be used (server down, file unreadable): a page naming the
        fault, 503, instead of a bare 500."""
        from html import escape

        logger.warning("%s %s: %s", request.method, request.url.path, exc)
        return HTMLResponse(
            "<!doctype html><title>Turnstile: store unavailable</title><h1>The store cannot "
            f"be used</h1><p>{escape(str(exc))}</p><p>The console answers again once it is "
            "back.</p>\n", status_code=503)

    # -- helpers --------------------------------------------------------------------------

    async def _read(self, fn: Callable[..., Any], *args: Any) -> Any:
        def work() -> Any:
            from engine.store.url import open_store

            store = open_store(self.db)
            try:
                return fn(store, *args)
            finally:
                store.close()

        return await anyio.to_thread.run_sync(work)

    def _page(self, name: str, request: Request, **ctx: Any) -> HTMLResponse:
        template = self.env.get_template(name)
        return HTMLResponse(template.render(csrf=self.guard.csrf_token(), path=request.url.path,
                                            statuses=STATUSES, **ctx))

    @staticmethod
    def _ids(request: Request) -> list[str] | None:
        ids = [str(v) for v in request.path_params.values()]
        return ids if all(safe_id(v) for v in ids) else None

    # -- pages ----------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        status = request.query_params.get("status") or None
        if status is not None and status not in STATUSES:
            return PlainTextResponse("400: unknown status\n", status_code=400)
        rows = await self._read(views.runs, status)
        return self._page("runs.html", request, runs=rows, status=status,
                          tasks=self._task_names())

    def _task_names(self) -> list[str]:
        if self.tasks is None or not self.tasks.is_dir():
            return []
        return sorted(p.name for p in self.tasks.iterdir() if (p / "task.yaml").is_file())

    async def start(self, request: Request) -> Response:
        """Start a golden task's run (only with ``--allow-start``; names from the listing)."""
        if self.tasks is None:
            return PlainTextResponse("404: starting runs is off (serve --allow-start)\n",
                                     status_code=404)
        form = await request.form()
        if not same_origin(request.headers) or not self.guard.csrf_ok(str(form.get("csrf", ""))):
            return PlainTextResponse("403: cross-site request refused\n", status_code=403)
        name = str(form.get("task", ""))
        if name not in self._task_names():
            return PlainTextResponse("400: unknown task\n", status_code=400)
        from engine.web.resume import start_in_background

        assert self.tasks is not None
        try:
            run_id = await anyio.to_thread.run_sync(start_in_background, self.db,
                                                    self.tasks / name)
        except TurnstileError as exc:
            return PlainTextResponse(f"400: {exc}\n", status_code=400)
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    async def api_runs(self, request: Request) -> Response:
        return JSONResponse(await self._read(views.runs, None))

    async def run(self, request: Request) -> Response:
        if self._ids(request) is None:
            return PlainTextResponse("400: bad run id\n", status_code=400)
        try:
            page = await self._read(views.run_page, request.path_params["run_id"])
        except TurnstileError as exc:
            return PlainTextResponse(f"404: {exc}\n", status_code=404)
        return self._page("run.html", request, **page)

    async def diagram(self, request: Request) -> Response:
        if self._ids(request) is None:
            return PlainTextResponse("400: bad run id\n", status_code=400)
        try:
            svg = await self._read(views.diagram_svg, request.path_params["run_id"])
        except TurnstileError as exc:
            return PlainTextResponse(f"404: {exc}\n", status_code=404)
        return Response(svg, media_type="image/svg+xml")

    async def approvals(self, request: Request) -> Response:
        from engine.permissions.parking import pending

        rows = await self._read(pending)
        return self._page("approvals.html", request, approvals=rows)

    # -- decisions ------------------------------------------------------------------------

    async def decide(self, request: Request) -> Response:
        ids = self._ids(request)
        if ids is None:
            return PlainTextResponse("400: bad id\n", status_code=400)
        form = await request.form()
        if not same_origin(request.headers) or not self.guard.csrf_ok(str(form.get("csrf", ""))):
            return PlainTextResponse("403: cross-site request refused\n", status_code=403)
        choice = str(form.get("decision", ""))
        if choice not in ("allow", "deny", "always"):
            return PlainTextResponse("400: decision is allow, deny or always\n", status_code=400)
        run_id, call_id = ids
        who = f"{_user()}@{request.client.host if request.client else 'web'}"

        def record() -> tuple[int, str]:
            from engine.web.resume import runs_of

            runs = runs_of(self.db)
            args_hash = str(form.get("args_hash", "")) or None
            if choice == "deny":
                done = runs.deny(run_id, call_id, reason=str(form.get("reason", ""))[:500],
                                 who=who, channel="web", args_hash=args_hash)
            else:
                done = runs.approve(run_id, call_id, always="run" if choice == "always" else None,
                                    who=who, channel="web", args_hash=args_hash)
            return done.still_pending, done.resume_run or done.run_id

        try:
            still_pending, to_resume = await anyio.to_thread.run_sync(record)
        except TurnstileError as exc:
            return PlainTextResponse(f"409: {exc}\n", status_code=409)
        if not still_pending:  # a child's call: its topmost run, which resumes the child
            self._resume(to_resume)
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    async def fork(self, request: Request) -> Response:
        """"Fork from here": a new run at the step the form names (``Runs.fork``), then its
        page."""
        ids = self._ids(request)
        if ids is None:
            return PlainTextResponse("400: bad run id\n", status_code=400)
        form = await request.form()
        if not same_origin(request.headers) or not self.guard.csrf_ok(str(form.get("csrf", ""))):
            return PlainTextResponse("403: cross-site request refused\n", status_code=403)
        try:
            step = int(str(form.get("step", "")))
        except ValueError:
            return PlainTextResponse("400: step is a number\n", status_code=400)
        allow_partial = form.get("allow_partial") == "1"

        def make() -> str:
            from engine.web.resume import runs_of

            return runs_of(self.db).fork(ids[0], step, allow_partial=allow_partial).run_id

        try:
            run_id = await anyio.to_thread.run_sync(make)
        except TurnstileError as exc:
            return PlainTextResponse(f"409: {exc}\n", status_code=409)
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    async def resume(self, request: Request) -> Response:
        """Resume an interrupted or crashed run from its page, in this process (as a decision
        on its last parked call does)."""
        if self._ids(request) is None:
            return PlainTextResponse("400: bad run id\n", status_code=400)
        form = await request.form()
        if not same_origin(request.headers) or not self.guard.csrf_ok(str(form.get("csrf", ""))):
            return PlainTextResponse("403: cross-site request refused\n", status_code=403)
        try:
            info = await self._read(lambda store, rid: store.get_run(rid),
                                    request.path_params["run_id"])
        except TurnstileError as exc:
            return PlainTextResponse(f"404: {exc}\n", status_code=404)
        if info.status not in views.RESUMABLE:
            return PlainTextResponse(f"409: run {info.run_id} is {info.status}, not "
                                     "interrupted or crashed\n", status_code=409)
        self._resume(info.run_id)
        return RedirectResponse(f"/runs/{info.run_id}", status_code=303)

    def _resume(self, run_id: str) -> None:
        """The run continues as soon as its last parked call is decided, in this process."""
        from engine.web.resume import resume_in_background

        self.resumed.append(resume_in_background(self.db, run_id))
        self.resumed = [t for t in self.resumed if t.is_alive()]

    # -- live updates -----------------------------------------------------------------------

    async def runs_events(self, request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            seen: Any = None
            while not await request.is_disconnected():
                rows = await self._read(views.runs, None)
                sig = [(r["run_id"], r["status"], r["steps"], r["updated_at"]) for r in rows]
                if sig != seen:
                    seen = sig
                    yield _sse("runs", rows)
                await anyio.sleep(POLL_S * 2)

        return _sse_response(stream())

    async def run_events(self, request: Request) -> Response:
        if self._ids(request) is None:
            return PlainTextResponse("400: bad run id\n", status_code=400)
        run_id = request.path_params["run_id"]
        try:
            step_from = int(request.query_params.get("step", "0"))
            stream_after = int(request.query_params.get("stream", "-1"))
        except ValueError:
            return PlainTextResponse("400: step and stream are numbers\n", status_code=400)

        def poll(store: Any, state: dict[str, Any]) -> list[str]:
            out: list[str] = []
            info = store.get_run(run_id)
            row = views.run_row(info, time.time())
            key = (info.status, info.steps, info.updated_at, info.state)
            if key != state.get("run"):
                state["run"] = key
                for s in store.steps(info.run_id):
                    if s.seq >= state["step_from"] and state["steps"].get(s.seq) != s.status:
                        state["steps"][s.seq] = s.status
                        out.append(_sse("step", views.step_row(s, state["red"])))
                out.append(_sse("run", row))
            for e in views.stream_rows(store, info.run_id, state["stream"]):
                state["stream"] = e["seq"]
                out.append(_sse("stream", e))
            return out

        async def stream() -> AsyncIterator[str]:
            state: dict[str, Any] = {"step_from": max(0, step_from - 1), "steps": {},
                                     "stream": stream_after, "red": redactor()}
            yield ": connected\n\n"
            while not await request.is_disconnected():
                for chunk in await self._read(poll, state):
                    yield chunk
                await anyio.sleep(POLL_S)

        return _sse_response(stream())


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, default=str)}\n\n"


def _sse_response(body: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _check_port(host: str, port: int) -> None:
    """A busy port or an address this machine does not have: one line, exit 2."""
    import socket

    from engine.vocabulary.errors import UsageError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host.strip("[]"), port))
        except OSError as exc:
            raise UsageError(f"serve --host {host} --port {port}: {exc.strerror}") from exc


def serve(db: Path | StoreTarget, host: str, port: int, token: str | None,
          tasks: Path | None = None) -> None:
    """Run the console until interrupted; ``tasks``: allow starting those golden tasks."""
    import uvicorn

    from engine.store.url import as_target
    from engine.web.security import check_bind, is_loopback

    check_bind(host, token)
    _check_port(host, port)
    console = Console(db, token, loopback=is_loopback(host), tasks=tasks)
    print(f"Turnstile console on http://{host}:{port}/ (database {as_target(db).display})",
          flush=True)
    uvicorn.run(console, host=host, port=port, log_level="warning", access_log=False)
