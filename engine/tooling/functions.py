"""Tools made from plain typed Python functions, and found again by import path.

``@tool(risk=...)`` turns a function (sync or async) into a ``ToolSpec``: the arguments'
JSON schema comes from the signature (pydantic), the descriptions from the docstring. The
function stays callable as before; its spec rides on it as ``fn.tool_spec``. A machine names
such a tool as ``module:function`` (``tools: [mypkg.tools:word_count]``) and a resumed run
imports it again from there, so the reference is all a run needs to store.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar, get_type_hints

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, create_model

from engine.tooling.spec import Risk, ToolContext, ToolResult, ToolSpec
from engine.vocabulary.errors import ToolImportError

F = TypeVar("F", bound=Callable[..., Any])

SPEC_ATTR = "tool_spec"
"""The attribute ``@tool`` sets on the function it decorates."""

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def tool(fn: F | None = None, *, risk: Risk = "exec", idempotent: bool = False,
         name: str | None = None, description: str | None = None, version: str = "1.0.0",
         timeout_s: float = 120.0, **spec_fields: Any) -> Any:
    """Declare a Python function a tool: ``@tool(risk="read", idempotent=True)``.

    Undeclared risk is ``exec`` and undeclared idempotency ``False`` (a resumed run does not
    repeat a call whose outcome is unknown): the permission layer asks rather than allows. A
    parameter annotated ``ToolContext`` receives the call's context (workspace, run data).
    Other ``ToolSpec`` fields may be passed by keyword.
    """
    def wrap(func: F) -> F:
        spec = function_spec(func, risk=risk, idempotent=idempotent, name=name,
                             description=description, version=version, timeout_s=timeout_s,
                             **spec_fields)
        setattr(func, SPEC_ATTR, spec)
        return func

    return wrap(fn) if fn is not None else wrap


def function_spec(func: Callable[..., Any], *, risk: Risk, idempotent: bool,
                  name: str | None = None, description: str | None = None,
                  version: str = "1.0.0", timeout_s: float = 120.0,
                  **spec_fields: Any) -> ToolSpec:
    """The ``ToolSpec`` of ``func``: schema from its signature, text from its docstring."""
    summary, arg_docs = _docstring(inspect.getdoc(func) or "")
    model, context_param = _input_model(func, arg_docs)
    return ToolSpec(
        name=name or func.__name__, version=version,
        description=description or summary or func.__name__.replace("_", " "),
        input_model=model, handler=_handler(func, context_param), risk=risk,
        idempotent=idempotent, side_effects=risk != "read", timeout_s=timeout_s,
        source=f"python:{reference(func)}", **spec_fields)


def reference(func: Callable[..., Any]) -> str:
    """``module:qualname``, the form a machine's ``tools:`` and a stored run use."""
    return f"{func.__module__}:{func.__qualname__}"


def is_reference(entry: str) -> bool:
    return ":" in entry


def spec_of(obj: Any, shown: str) -> ToolSpec:
    """The tool behind ``obj``: a ``ToolSpec`` or a function decorated with ``@tool``."""
    if isinstance(obj, ToolSpec):
        return obj
    spec = getattr(obj, SPEC_ATTR, None)
    if isinstance(spec, ToolSpec):
        return spec
    raise ToolImportError(f"{shown} is not a tool: decorate it with @engine.tool(risk=...)")


def import_tool(ref: str) -> ToolSpec:
    """Import ``module:qualname`` and return its tool; one clear error if that fails. The
    module is looked for in the folder the engine runs in first (the project's own tools),
    then on the import path; that folder is on the path only while the tool is imported, so
    nothing else the engine imports can come from it."""
    module_name, _, qualname = ref.partition(":")
    here = os.getcwd()
    sys.path.insert(0, here)
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # any failure of the user's module is the same bad input
        raise ToolImportError(f"tool {ref} cannot be imported: {type(exc).__name__}: {exc}") \
            from exc
    finally:
        sys.path.remove(here)
    return spec_of(obj, f"tool {ref}")


def resolve(refs: Iterable[str], given: Sequence[ToolSpec] = ()) -> list[ToolSpec]:
    """The tools behind ``refs``; one given by the caller under the same name wins (no import)."""
    names = {s.name for s in given}
    sources = {s.source for s in given}
    out = list(given)
    for ref in dict.fromkeys(refs):
        if f"python:{ref}" in sources or ref.rpartition(".")[2].rpartition(":")[2] in names:
            continue
        out.append(import_tool(ref))
    return out


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and the ``Args:`` entries (Google style) by parameter name."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    header = next((i for i, line in enumerate(lines) if _ARGS_HEADER.match(line)), None)
    if header is not None:
        base = _indent(lines[header])
        entry_indent: int | None = None
        current = ""
        for line in lines[header + 1:]:
            if line.strip() and _indent(line) <= base:
                break  # the next section
            m = _ARG_LINE.match(line)
            if m and (entry_indent is None or _indent(line) == entry_indent):
                entry_indent = _indent(line)
                current = m.group(1)
                args[current] = m.group(3).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(summary), args


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _input_model(func: Callable[..., Any],
                 arg_docs: Mapping[str, str]) -> tuple[type[BaseModel], str | None]:
    """A pydantic model of ``func``'s parameters, and the name of its ``ToolContext`` one."""
    hints = get_type_hints(func)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(func).parameters.values():
        hint = hints.get(param.name, Any)
        if hint is ToolContext:
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{reference(func)}: a tool takes named parameters, not "
                            f"*{param.name}")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hint, Field(default, description=arg_docs.get(param.name)))
    model = create_model(
        f"{func.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return model, context_param


def _handler(func: Callable[..., Any], context_param: str | None) -> Any:
    """The engine-side handler: validated arguments in, a ``ToolResult`` out."""
    is_async = inspect.iscoroutinefunction(func)

    async def handle(args: BaseModel, ctx: ToolContext) -> ToolResult:
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        if context_param is not None:
            kwargs[context_param] = ctx
        if is_async:
            value = await func(**kwargs)
        else:  # a blocking function must not stall the run's event loop
            value = await anyio.to_thread.run_sync(partial(func, **kwargs))
        return _result(value)

    return handle


def _result(value: Any) -> ToolResult:
    """What the function returned, as the model sees it (text as is, the rest as JSON)."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if isinstance(value, BaseModel):
        return ToolResult(value.model_dump_json())
    return ToolResult(json.dumps(value, ensure_ascii=False, default=str))
