"""Type hints → JSON Schema, and the checker that holds the model's arguments to them.

Supported (the seed page's list, less Pydantic): str, int, float, bool, Literal[...],
Enum, list[T], dict[str, T], T | None, dataclasses and TypedDict. Named types (Enum,
dataclass, TypedDict) go to `$defs` and are referred to with `$ref`. A checker takes a
JSON value and returns the Python value the function gets, or raises ToolInputError
naming where the value does not fit (`points[2].x: expected a number, not a string`).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any, Callable

from ._errors import State, ToolInputError

SUPPORTED = (
    "str, int, float, bool, Literal[...], an Enum, list[T], dict[str, T], T | None, "
    "a dataclass or a TypedDict"
)

Checker = Callable[[Any, str], Any]


class Unsupported(TypeError):
    """A hint piton cannot turn into a schema; the message says why and what instead."""


def json_kind(value: Any) -> str:
    """The kind of a parsed JSON value as messages name it (as piton's host does)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _at(path: str, message: str) -> ToolInputError:
    return ToolInputError(f"{path}: {message}" if path else message)


def _expected(path: str, what: str, value: Any) -> ToolInputError:
    return _at(path, f"expected {what}, not {json_kind(value)}")


def is_pydantic(hint: Any) -> bool:
    return isinstance(hint, type) and (
        hasattr(hint, "model_json_schema") or hasattr(hint, "__pydantic_fields__")
    )


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


class Schemas:
    """Turns hints into schemas and checkers, collecting the named ones in `defs`."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._names: dict[Any, str] = {}
        self._checkers: dict[str, Checker] = {}

    def hint(self, hint: Any) -> tuple[dict[str, Any], Checker]:
        """The schema and checker of one hint; Unsupported when it has none."""
        if hint is State or (isinstance(hint, type) and issubclass(hint, State)):
            raise Unsupported("state")
        if hint is str:
            return {"type": "string"}, _check_str
        if hint is bool:
            return {"type": "boolean"}, _check_bool
        if hint is int:
            return {"type": "integer"}, _check_int
        if hint is float:
            return {"type": "number"}, _check_float
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is typing.Annotated:
            return self.hint(args[0])
        if origin is typing.Literal:
            return _literal(args)
        if origin in (typing.Union, types.UnionType):
            return self._optional(hint, args)
        if origin is list:
            if len(args) != 1:
                raise Unsupported(f"{_name(hint)}: give the item type, as list[str]")
            items, check = self.hint(args[0])
            return {"type": "array", "items": items}, _list_checker(check)
        if origin is dict:
            if len(args) != 2 or args[0] is not str:
                raise Unsupported(f"{_name(hint)}: a dict's keys are str, as dict[str, int]")
            values, check = self.hint(args[1])
            return {"type": "object", "additionalProperties": values}, _dict_checker(check)
        if is_pydantic(hint):
            raise Unsupported("pydantic")
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return self._named(hint, self._enum)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self._named(hint, self._dataclass)
        if _is_typeddict(hint):
            return self._named(hint, self._typeddict)
        raise Unsupported(f"{_name(hint)} is not supported: use {SUPPORTED}")

    def _optional(self, hint: Any, args: tuple[Any, ...]) -> tuple[dict[str, Any], Checker]:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(rest) == len(args):
            raise Unsupported(
                f"{_name(hint)} is not supported: a union is only T | None; use {SUPPORTED}"
            )
        schema, check = self.hint(rest[0])
        if set(schema) == {"type"} and isinstance(schema["type"], str):
            nullable = {"type": [schema["type"], "null"]}
        else:
            nullable = {"anyOf": [schema, {"type": "null"}]}

        def check_optional(value: Any, path: str) -> Any:
            return None if value is None else check(value, path)

        return nullable, check_optional

    def _named(self, hint: type, make: Callable[[type], tuple[dict[str, Any], Checker]]) -> tuple[dict[str, Any], Checker]:
        name = self._names.get(hint)
        if name is None:
            name = hint.__name__
            n = 2
            while name in self.defs:
                name = f"{hint.__name__}{n}"
                n += 1
            self._names[hint] = name
            self.defs[name] = {}  # a placeholder while a recursive type is made
            schema, check = make(hint)
            self.defs[name] = schema
            self._checkers[name] = check
        checkers = self._checkers

        def check_named(value: Any, path: str) -> Any:
            return checkers[name](value, path)

        return {"$ref": f"#/$defs/{name}"}, check_named

    def _enum(self, hint: type[enum.Enum]) -> tuple[dict[str, Any], Checker]:
        members = list(hint)
        values = [m.value for m in members]
        if not values or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
            raise Unsupported(f"the Enum {hint.__name__} needs str or int values")
        schema: dict[str, Any] = _enum_schema(values)
        doc = hint.__doc__
        if doc and doc != enum.Enum.__doc__ and not doc.startswith("An enumeration"):
            schema = {"description": " ".join(doc.split()), **schema}

        def check_enum(value: Any, path: str) -> Any:
            for member in members:
                if _same(member.value, value):
                    return member
            raise _at(path, f"expected one of {_show(values)}, not {_show_value(value)}")

        return schema, check_enum

    def _fields(self, owner: type, hints: dict[str, Any], required: set[str], defaults: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Checker]]:
        properties: dict[str, Any] = {}
        checks: dict[str, Checker] = {}
        for field, hint in hints.items():
            try:
                schema, check = self.hint(hint)
            except Unsupported as error:
                raise Unsupported(f"{owner.__name__}.{field}: {_why(error)}") from None
            if field in defaults:
                default = _json_default(defaults[field])
                if default is not _NO_DEFAULT:
                    schema = {**schema, "default": default}
            properties[field] = schema
            checks[field] = check
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        ordered = [f for f in hints if f in required]
        if ordered:
            schema["required"] = ordered
        schema["additionalProperties"] = False
        return schema, checks

    def _dataclass(self, hint: type) -> tuple[dict[str, Any], Checker]:
        hints = _type_hints(hint)
        fields = [f for f in dataclasses.fields(hint) if f.init]
        hints = {f.name: hints[f.name] for f in fields}
        defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
        required = {
            f.name for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        schema, checks = self._fields(hint, hints, required, defaults)

        def check_dataclass(value: Any, path: str) -> Any:
            return hint(**check_object(value, path, checks, required))

        return schema, check_dataclass

    def _typeddict(self, hint: type) -> tuple[dict[str, Any], Checker]:
        hints = _type_hints(hint)
        required = set(hint.__required_keys__)  # type: ignore[attr-defined]
        schema, checks = self._fields(hint, hints, required, {})

        def check_typeddict(value: Any, path: str) -> Any:
            return check_object(value, path, checks, required)

        return schema, check_typeddict


def _why(error: Exception) -> str:
    text = str(error)
    if text == "state":
        return "a State cannot cross the sandbox"
    if text == "pydantic":
        return "a Pydantic model cannot cross the sandbox (use a dataclass or a TypedDict)"
    return text


def _type_hints(owner: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except Exception as error:  # a name the hints use that is not defined
        raise Unsupported(f"the type hints of {getattr(owner, '__name__', owner)!s} do not resolve: {error}") from None


def check_object(value: Any, path: str, checks: dict[str, Checker], required: set[str]) -> dict[str, Any]:
    """A JSON object checked field by field: unknown and missing fields are input errors."""
    if not isinstance(value, dict):
        raise _expected(path, "an object", value)
    for key in value:
        if key not in checks:
            raise _at(path, f"unexpected argument {key!r}") if not path else _at(path, f"unexpected field {key!r}")
    for key in checks:
        if key in required and key not in value:
            raise _at(path, f"missing argument {key!r}") if not path else _at(path, f"missing field {key!r}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        out[key] = checks[key](item, f"{path}.{key}" if path else key)
    return out


def _check_str(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise _expected(path, "a string", value)
    return value


def _check_bool(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise _expected(path, "a boolean", value)
    return value


def _check_int(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _expected(path, "an integer", value)
    if isinstance(value, float):
        if not value.is_integer():
            raise _at(path, f"expected an integer, not {value!r}")
        return int(value)
    return value


def _check_float(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _expected(path, "a number", value)
    return float(value)


def _list_checker(check: Checker) -> Checker:
    def check_list(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise _expected(path, "an array", value)
        return [check(item, f"{path}[{i}]") for i, item in enumerate(value)]

    return check_list


def _dict_checker(check: Checker) -> Checker:
    def check_dict(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _expected(path, "an object", value)
        return {k: check(v, f"{path}.{k}" if path else k) for k, v in value.items()}

    return check_dict


def _same(expected: Any, value: Any) -> bool:
    return type(expected) is type(value) and expected == value or (
        type(expected) is int and type(value) is float and value == expected
    )


def _show_value(value: Any) -> str:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return _show([value])
    return json_kind(value)


def _show(values: list[Any]) -> str:
    import json

    return ", ".join(json.dumps(v, ensure_ascii=False) for v in values)


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    if all(isinstance(v, str) for v in values):
        return {"type": "string", "enum": values}
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return {"type": "integer", "enum": values}
    return {"enum": values}


def _literal(values: tuple[Any, ...]) -> tuple[dict[str, Any], Checker]:
    flat: list[Any] = []
    for v in values:
        if typing.get_origin(v) is typing.Literal:  # Literal[Literal["a"], "b"]
            flat.extend(typing.get_args(v))
        else:
            flat.append(v)
    if not flat or not all(isinstance(v, (str, int, bool)) or v is None for v in flat):
        raise Unsupported("a Literal takes str, int, bool or None values")
    values_list = [v.value if isinstance(v, enum.Enum) else v for v in flat]

    def check_literal(value: Any, path: str) -> Any:
        for v in values_list:
            if _same(v, value):
                return v
        raise _at(path, f"expected one of {_show(values_list)}, not {_show_value(value)}")

    if all(isinstance(v, bool) for v in values_list):
        return {"type": "boolean", "enum": values_list}, check_literal
    return _enum_schema(values_list), check_literal


class _NoDefault:
    pass


_NO_DEFAULT = _NoDefault()


def _json_default(value: Any) -> Any:
    """A default as JSON for the schema, or _NO_DEFAULT when it is not JSON."""
    import json

    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return _NO_DEFAULT
    return value


def json_default(value: Any) -> Any:
    return _json_default(value)


def has_default(value: Any) -> bool:
    return value is not _NO_DEFAULT


def _name(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__name__
    text = repr(hint)
    return text.replace("typing.", "")
