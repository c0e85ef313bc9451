"""The component side of a piton Python tool: the one file that imports `wit_world`
(the bindings componentize-py generates). The app module piton's build writes imports
the user's file inside the component being built, then calls `toolbox(module)`, which
collects its tools and returns the class componentize-py exports as `toolbox`.

Everything here but the `Toolbox` methods runs once, at build time; the heap is then
snapshotted, so the tools, their schemas and every imported module are in the
component, and nothing is imported at run time."""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
import traceback
from typing import Any, Iterator

from ._errors import ToolError, ToolInputError
from ._result import to_contents
from ._schema import json_kind
from ._tool import Tool

ERROR_MARK = "piton-build-error: "


def preimport(names: list[str]) -> None:
    """Imports what run time may need: only what is imported now is in the component."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # not in this interpreter (a user import fails later, named)
            pass


def preimport_user(imports: list[tuple[str, str, int]]) -> None:
    """Imports every module the user's files import anywhere (also inside functions):
    one that is not in the sandbox fails the build at the line naming it."""
    for name, label, line in imports:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as error:
            _report(f"{label}:{line}: {_missing_module(error.name or name)}")
            error._piton_reported = True  # type: ignore[attr-defined]
            raise


def _report(message: str) -> None:
    print(f"{ERROR_MARK}{message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def build_errors(files: dict[str, str]) -> Iterator[None]:
    """Reports an exception raised inside as `piton-build-error: FILE:LINE: message`
    (FILE as the user named it; `files` maps staged paths to those names), then
    re-raises it so the build fails."""
    try:
        yield
    except BaseException as error:
        if not getattr(error, "_piton_reported", False):
            _report(describe(error, files))
        raise


def describe(error: BaseException, files: dict[str, str]) -> str:
    where = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename in files:
            where = f"{files[frame.filename]}:{frame.lineno}: "
    if isinstance(error, SyntaxError) and error.filename in files:
        where = f"{files[error.filename]}:{error.lineno}: "
        return f"{where}SyntaxError: {error.msg}"
    if isinstance(error, ModuleNotFoundError):
        return f"{where}{_missing_module(error.name or str(error))}"
    return f"{where}{type(error).__name__}: {error}"


_NATIVE = {
    "pydantic": "pydantic-core is native code that cannot run inside the WebAssembly sandbox: use a dataclass or a TypedDict",
    "pydantic_core": "pydantic-core is native code that cannot run inside the WebAssembly sandbox: use a dataclass or a TypedDict",
    "numpy": "numpy is native code that cannot run inside the WebAssembly sandbox",
    "httpx": "it needs sockets, which the sandbox does not have: use piton.http (from piton import http), which goes through wasi:http",
    "requests": "it needs sockets, which the sandbox does not have: use piton.http (from piton import http), which goes through wasi:http",
    "alpineagents": "import the same names from piton instead (from piton import tool, Tool, ...)",
}


def _missing_module(name: str) -> str:
    top = name.split(".")[0]
    why = _NATIVE.get(top)
    if why is None:
        why = (
            "only the standard library, piton and the .py files beside the built file "
            "are in the sandbox"
        )
    return f"cannot import {name!r} in the sandbox: {why}"


def collect(module: Any, label: str) -> list[Tool]:
    """Every Tool instance at module level of `module`, in definition order."""
    found: list[Tool] = []
    seen: set[int] = set()
    classes: list[str] = []
    for key, value in vars(module).items():
        if isinstance(value, type) and issubclass(value, Tool) and value.__module__ == module.__name__:
            classes.append(value.__name__)
        if isinstance(value, Tool) and id(value) not in seen:
            seen.add(id(value))
            value._check_exportable()
            found.append(value)
    names: dict[str, Tool] = {}
    for t in found:
        if t.name in names:
            raise TypeError(f"two tools are named {t.name!r}: give one another name (@tool(name=...))")
        names[t.name] = t
    if not found:
        hint = ""
        if classes:
            hint = f" ({', '.join(classes)} is a class: make an instance of it at module level)"
        raise TypeError(
            f"{label} defines no tools: decorate a function with @tool or make a "
            f"module-level instance of a Tool subclass{hint}"
        )
    if len(found) > 128:
        raise TypeError(f"{label} defines {len(found)} tools; a component may export at most 128")
    return found


def _hints(wit: Any, h: Any) -> Any:
    return wit.ToolHints(bool(h.read_only), bool(h.destructive), bool(h.idempotent), bool(h.open_world))


def _args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ToolInputError(f"the arguments are not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ToolInputError(f"the arguments must be a JSON object, not {json_kind(value)}")
    return value


def toolbox(module: Any, label: str, specs_out: str | None = None) -> type:
    """The class componentize-py exports as `piton:tool/toolbox`, serving the tools of
    `module`; the specs are also written as JSON to `specs_out` for the build's report."""
    from componentize_py_types import Err
    from wit_world import exports
    from wit_world.exports.toolbox import ToolDecl
    from wit_world.imports import piton_types as wit

    tools = collect(module, label)
    by_name = {t.name: t for t in tools}
    decls = [
        ToolDecl(
            wit.ToolSpec(t.name, t.description, json.dumps(t.input_schema, ensure_ascii=False), t.parallel),
            _hints(wit, t.hints),
            t._narrows_hints(),
        )
        for t in tools
    ]
    if specs_out is not None:
        with open(specs_out, "w", encoding="utf-8") as out:
            json.dump(
                [
                    {"name": t.name, "description": t.description, "input_schema": t.input_schema,
                     "read_only": t.read_only, "destructive": t.destructive,
                     "idempotent": t.idempotent, "open_world": t.open_world}
                    for t in tools
                ],
                out,
            )

    def block(kind: str, value: Any) -> Any:
        if kind == "text":
            return wit.Content_Text(value)
        if kind == "json":
            return wit.Content_Json(value)
        return wit.Content_Image(wit.Image(value.mime_type, value.data))

    class Toolbox(exports.Toolbox):
        def tools(self) -> list[Any]:
            return decls

        def hints_for(self, tool: str, args: str) -> Any:
            try:
                parsed = _args(args)
            except ToolInputError:
                return None
            return _hints(wit, by_name[tool].hints_for(parsed))

        def run(self, tool: str, args: str) -> list[Any]:
            t = by_name[tool]
            try:
                value = t.run(_args(args))
            except ToolInputError as error:
                raise Err(wit.ToolError_Input(str(error)))
            except ToolError as error:
                raise Err(wit.ToolError_Failed(str(error)))
            return [block(kind, value) for kind, value in to_contents(value, t.name)]

    return Toolbox
