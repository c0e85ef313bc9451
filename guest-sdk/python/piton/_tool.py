"""Tools: `Tool` (subclass it: a name, a description, an input schema and `run(args)`),
`FunctionTool` (what `@tool` makes from a function: the schema from the type hints,
the description from the docstring, the arguments checked before the call) and `tool`.

Every mistake the seed page lists raises here, when the decorator or `__init__` runs:
in a piton build that is at build time, inside the component being built."""

from __future__ import annotations

import copy as _copy
import inspect
import json
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ._docs import parse_doc
from ._errors import State, ToolError
from ._hints import Hints, resolve_hints
from ._schema import Schemas, Unsupported, check_object, has_default, is_pydantic, json_default

MAX_DESCRIPTION = 64 << 10
MAX_SCHEMA = 256 << 10
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

STATE_WHY = (
    "a piton tool runs sandboxed, in a fresh instance for each call, and cannot reach "
    "the agent's State; drop it (keep what must last in a granted folder)"
)
PYDANTIC_WHY = (
    "pydantic-core is native code that cannot run inside the WebAssembly sandbox: "
    "use a dataclass or a TypedDict"
)
ASYNC_WHY = "a tool is a synchronous function: async def is not supported"


@dataclass(frozen=True)
class ToolSpec:
    """The tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]


def check_tool_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a tool name is a str, not {type(name).__name__}")
    if not _NAME.fullmatch(name):
        raise TypeError(
            f"tool name {name!r} is not allowed: use 1 to 64 letters, digits, '_' or '-'"
        )
    return name


def _check_description(name: str, description: Any) -> str:
    if not isinstance(description, str):
        raise TypeError(f"{name}: description must be a str, not {type(description).__name__}")
    if len(description.encode()) > MAX_DESCRIPTION:
        raise TypeError(f"{name}: the description is over 64 KiB")
    return description


def _check_input_schema(name: str, schema: Any) -> dict[str, Any]:
    if schema is None:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, Mapping):
        raise TypeError(f"{name}: input_schema must be a dict, not {type(schema).__name__}")
    if schema.get("type") != "object":
        raise TypeError(
            f'{name}: input_schema is not an object schema: it needs "type": "object"'
        )
    try:
        text = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name}: input_schema is not JSON: {error}") from None
    if len(text) > MAX_SCHEMA:
        raise TypeError(f"{name}: the input schema is over 256 KiB as JSON")
    return json.loads(text)


class Tool:
    """A tool the model can call. A subclass calls `super().__init__(...)` with the
    name, description and input schema, and implements `run(self, args)`."""

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        parallel: bool = True,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
    ) -> None:
        self.name = check_tool_name(name)
        self.description = _check_description(self.name, description)
        self.input_schema = _check_input_schema(self.name, input_schema)
        if not isinstance(parallel, bool):
            raise TypeError(f"{self.name}: parallel must be True or False, not {type(parallel).__name__}")
        self.parallel = parallel
        (self.read_only, self.destructive, self.idempotent, self.open_world) = resolve_hints(
            read_only, destructive, idempotent, open_world, where=self.name
        )
        self._piton_initialized = True

    @property
    def spec(self) -> ToolSpec:
        """The tool as the model sees it: ToolSpec(name, description, input_schema)."""
        return ToolSpec(self.name, self.description, _copy.deepcopy(self.input_schema))

    @property
    def is_async(self) -> bool:
        """True if run is async def (piton refuses such a tool when it is built)."""
        return inspect.iscoroutinefunction(self.run)

    @property
    def hints(self) -> Hints:
        """The tool's own hints: the worst case for any call."""
        return Hints(
            read_only=self.read_only,
            destructive=self.destructive,
            idempotent=self.idempotent,
            open_world=self.open_world,
        )

    def run(self, args: dict[str, Any]) -> Any:
        """Runs one call with the model's arguments (a dict, not checked against
        input_schema). A subclass implements it."""
        raise TypeError(f"{type(self).__name__} does not define run(self, args)")

    def hints_for(self, args: Mapping[str, Any]) -> Hints:
        """The hints of one call; by default the tool's own hints."""
        return self.hints

    def _narrows_hints(self) -> bool:
        return type(self).hints_for is not Tool.hints_for

    def _check_exportable(self) -> None:
        """The checks the page makes when the Agent is created: piton makes them when
        the build collects the module's tools."""
        cls = type(self)
        if not getattr(self, "_piton_initialized", False):
            raise TypeError(f"{cls.__name__}: __init__ did not call super().__init__(...)")
        if cls.run is Tool.run:
            raise TypeError(f"{cls.__name__} does not define run(self, args)")
        if inspect.iscoroutinefunction(cls.run):
            raise TypeError(f"{cls.__name__}.run: {ASYNC_WHY}")
        try:
            params = list(inspect.signature(cls.run).parameters.values())[1:]
        except (TypeError, ValueError):
            return
        if len(params) > 1 and any(p.default is inspect.Parameter.empty for p in params[1:]):
            extra = params[1]
            hint = extra.annotation
            if hint is State or hint == "State" or extra.name == "state":
                raise TypeError(f"{cls.__name__}.run: parameter {extra.name!r} is a State, but {STATE_WHY}")
            raise TypeError(f"{cls.__name__}.run takes (self, args), not also {extra.name!r}")
        if not params:
            raise TypeError(f"{cls.__name__}.run takes (self, args)")


def _exception_types(fn: str, handler: Any) -> tuple[type[BaseException], ...]:
    bad = (
        f"{fn}: exception_handler must be a function with one parameter whose type hint "
        "names Exception subclasses (such as `error: FileNotFoundError | PermissionError`)"
    )
    if not (inspect.isfunction(handler) or inspect.ismethod(handler)):
        raise TypeError(bad)
    params = list(inspect.signature(handler).parameters.values())
    if len(params) != 1 or params[0].kind in (params[0].VAR_POSITIONAL, params[0].VAR_KEYWORD):
        raise TypeError(bad)
    try:
        hint = typing.get_type_hints(handler).get(params[0].name)
    except Exception:
        raise TypeError(bad) from None
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        found = typing.get_args(hint)
    else:
        found = (hint,)
    if not found or not all(isinstance(t, type) and issubclass(t, Exception) for t in found):
        raise TypeError(bad)
    return tuple(found)


def _check_hints_for(fn: str, hints_for: Any) -> None:
    bad = f"{fn}: hints_for must be a regular function with one parameter (the arguments)"
    if not (inspect.isfunction(hints_for) or inspect.ismethod(hints_for)):
        raise TypeError(bad)
    if inspect.iscoroutinefunction(hints_for) or inspect.isgeneratorfunction(hints_for):
        raise TypeError(bad)
    params = [
        p for p in inspect.signature(hints_for).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if len(params) != 1:
        raise TypeError(bad)


_OPTIONS = (
    "name", "description", "parallel", "exception_handler", "hints_for",
    "read_only", "destructive", "idempotent", "open_world",
)


class FunctionTool(Tool):
    """A tool made by @tool from a function. Calling it runs the function as is."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parallel: bool = True,
        exception_handler: Callable[[Any], str] | None = None,
        hints_for: Callable[[dict[str, Any]], Hints | None] | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
    ) -> None:
        if isinstance(fn, Tool):
            raise TypeError(f"@tool is applied twice (to the tool {fn.name!r})")
        if not inspect.isfunction(fn):
            what = f"the class {fn.__name__}" if isinstance(fn, type) else f"a {type(fn).__name__}"
            raise TypeError(f"@tool takes a function, not {what} (subclass Tool for other tools)")
        label = getattr(fn, "__qualname__", fn.__name__)
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(f"{label}: {ASYNC_WHY}")
        summary, arg_docs = parse_doc(fn.__doc__)
        schema, checks, required, self._skip_self = _signature(label, fn, arg_docs)
        super().__init__(
            name=fn.__name__ if name is None else name,
            description=summary if description is None else description,
            input_schema=schema,
            parallel=parallel,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            open_world=open_world,
        )
        self.fn = fn
        self.exception_handler = exception_handler
        self._handled = () if exception_handler is None else _exception_types(label, exception_handler)
        if hints_for is not None:
            _check_hints_for(label, hints_for)
        self._hints_for = hints_for
        self._checks = checks
        self._required = required
        self._bound: Any = None
        self._options = {
            "name": name, "description": description, "parallel": parallel,
            "exception_handler": exception_handler, "hints_for": hints_for,
            "read_only": read_only, "destructive": destructive,
            "idempotent": idempotent, "open_world": open_world,
        }
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._bound is not None:
            return self.fn(self._bound, *args, **kwargs)
        return self.fn(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None or not self._skip_self:
            return self
        bound = _copy.copy(self)
        bound._bound = obj
        return bound

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name}>"

    def check_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function: `args` checked against the type
        hints (ToolInputError when they do not fit)."""
        return check_object(dict(args), "", self._checks, self._required)

    def run(self, args: dict[str, Any]) -> Any:
        """Checks the arguments against the type hints (ToolInputError if they do not
        fit), then calls the function; an exception the exception_handler names
        becomes a ToolError with the handler's message."""
        kwargs = self.check_args(args)
        try:
            return self(**kwargs)
        except self._handled as error:
            message = self.exception_handler(error)  # type: ignore[misc]
            if not isinstance(message, str):
                raise TypeError(
                    f"{self.name}: exception_handler returned {type(message).__name__}, not a str"
                ) from error
            raise ToolError(message) from error

    def hints_for(self, args: Mapping[str, Any]) -> Hints:
        """What the hints_for= function returns for args, or the tool's own hints."""
        if self._hints_for is None:
            return self.hints
        found = self._hints_for(args)
        if found is None:
            return self.hints
        if not isinstance(found, Hints):
            raise TypeError(
                f"{self.name}: hints_for returned {type(found).__name__}, not Hints or None"
            )
        return found

    def _narrows_hints(self) -> bool:
        return self._hints_for is not None

    def _check_exportable(self) -> None:
        pass

    def copy(self, **changes: Any) -> FunctionTool:
        """A new tool with some options changed; a bound tool stays bound."""
        for key in changes:
            if key not in _OPTIONS:
                raise TypeError(f"copy() got {key!r}, which is not a @tool option")
        made = FunctionTool(self.fn, **{**self._options, **changes})
        made._bound = self._bound
        return made


def _signature(label: str, fn: Callable[..., Any], arg_docs: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any], set[str], bool]:
    """The input schema, field checkers, required names and whether `self` is skipped."""
    params = list(inspect.signature(fn).parameters.values())
    skip_self = bool(params) and params[0].name == "self"
    if skip_self:
        params = params[1:]
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as error:
        raise TypeError(f"{label}: its type hints do not resolve: {error}") from None
    schemas = Schemas()
    properties: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    required: set[str] = set()
    for p in params:
        if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise TypeError(f"{label}: a tool cannot take {star}{p.name}: name each parameter")
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"{label}: a tool cannot take positional-only parameters ({p.name!r})")
        if p.name not in hints:
            raise TypeError(f"{label}: parameter {p.name!r} needs a type hint ({_supported()})")
        hint = hints[p.name]
        if hint is State or (isinstance(hint, type) and issubclass(hint, State)):
            raise TypeError(f"{label}: parameter {p.name!r} is a State, but {STATE_WHY}")
        if is_pydantic(hint):
            raise TypeError(f"{label}: parameter {p.name!r} is a Pydantic model; {PYDANTIC_WHY}")
        try:
            schema, check = schemas.hint(hint)
        except Unsupported as error:
            text = str(error)
            if text == "state":
                raise TypeError(f"{label}: parameter {p.name!r} holds a State, but {STATE_WHY}") from None
            if text == "pydantic":
                raise TypeError(f"{label}: parameter {p.name!r} holds a Pydantic model; {PYDANTIC_WHY}") from None
            raise TypeError(f"{label}: parameter {p.name!r}: {text}") from None
        if p.name in arg_docs and arg_docs[p.name]:
            schema = {**schema, "description": arg_docs[p.name]}
        if p.default is p.empty:
            required.add(p.name)
        else:
            default = json_default(p.default)
            if has_default(default):
                schema = {**schema, "default": default}
        properties[p.name] = schema
        checks[p.name] = check
    names = {p.name for p in params}
    for documented in arg_docs:
        if documented not in names:
            raise TypeError(f"{label}: the docstring's Args: names {documented!r}, which is not a parameter")
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    ordered = [p.name for p in params if p.name in required]
    if ordered:
        schema["required"] = ordered
    schema["additionalProperties"] = False
    if schemas.defs:
        schema["$defs"] = schemas.defs
    return schema, checks, required, skip_self


def _supported() -> str:
    from ._schema import SUPPORTED

    return f"supported: {SUPPORTED}"


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel: bool = True,
    exception_handler: Callable[[Any], str] | None = None,
    hints_for: Callable[[dict[str, Any]], Hints | None] | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
) -> Any:
    """Turns a function into a tool: bare (`@tool`) or with options (`@tool(name=...)`)."""
    options = dict(
        name=name, description=description, parallel=parallel,
        exception_handler=exception_handler, hints_for=hints_for, read_only=read_only,
        destructive=destructive, idempotent=idempotent, open_world=open_world,
    )
    if fn is not None:
        return FunctionTool(fn, **options)

    def decorate(fn: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(fn, **options)

    return decorate
