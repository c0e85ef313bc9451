"""The pure-Python part of piton's SDK: schemas from type hints, argument checks,
return values, hints and every TypeError/ValueError the seed page lists. Runs on the
build machine's Python (3.10+), no component needed:

    python3 -m unittest discover -s guest-sdk/python/tests
"""

import enum
import json
import sys
import unittest
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from piton import (  # noqa: E402
    FunctionTool,
    Hints,
    Image,
    State,
    Tool,
    ToolError,
    ToolInputError,
    tool,
)
from piton._component import collect, describe  # noqa: E402
from piton._docs import parse_doc  # noqa: E402
from piton._result import to_contents  # noqa: E402

PNG = bytes.fromhex("89504e470d0a1a0a") + b"data"


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: float
    y: float = 0.0


class Opts(TypedDict, total=False):
    verbose: bool


class Schemas(unittest.TestCase):
    def test_the_page_example_read_file(self) -> None:
        @tool
        def read_file(path: str) -> str:
            """Read a file's contents

            Args:
                path: Path relative to the repository root
            """
            return path

        self.assertEqual(read_file.name, "read_file")
        self.assertEqual(read_file.description, "Read a file's contents")
        self.assertEqual(
            read_file.input_schema,
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repository root"}
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        )
        self.assertEqual(read_file.spec.input_schema, read_file.input_schema)
        self.assertEqual(read_file("x"), "x", "calling it runs the function as is")

    def test_every_supported_hint(self) -> None:
        @tool
        def f(
            s: str,
            i: int,
            x: float,
            b: bool,
            lit: Literal["a", "b"],
            c: Color,
            xs: list[int],
            d: dict[str, bool],
            o: str | None,
            p: Point,
            t: Opts,
            n: Optional[int] = 3,
            m: list[Point] | None = None,
        ) -> None:
            """F."""

        props = f.input_schema["properties"]
        self.assertEqual(props["s"], {"type": "string"})
        self.assertEqual(props["i"], {"type": "integer"})
        self.assertEqual(props["x"], {"type": "number"})
        self.assertEqual(props["b"], {"type": "boolean"})
        self.assertEqual(props["lit"], {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(props["c"], {"$ref": "#/$defs/Color"})
        self.assertEqual(props["xs"], {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(props["d"], {"type": "object", "additionalProperties": {"type": "boolean"}})
        self.assertEqual(props["o"], {"type": ["string", "null"]})
        self.assertEqual(props["n"], {"type": ["integer", "null"], "default": 3})
        self.assertEqual(
            props["m"],
            {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Point"}}, {"type": "null"}], "default": None},
        )
        defs = f.input_schema["$defs"]
        self.assertEqual(defs["Color"], {"type": "string", "enum": ["red", "green"]})
        self.assertEqual(
            defs["Point"],
            {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
                "required": ["x"],
                "additionalProperties": False,
            },
        )
        self.assertEqual(defs["Opts"]["properties"], {"verbose": {"type": "boolean"}})
        self.assertNotIn("required", defs["Opts"])
        self.assertEqual(
            f.input_schema["required"], ["s", "i", "x", "b", "lit", "c", "xs", "d", "o", "p", "t"]
        )
        json.dumps(f.input_schema)

    def test_docstring_paragraph_and_args(self) -> None:
        summary, args = parse_doc(
            """Count words
            in a text.

            More detail.

            Args:
                text (str): The text,
                    wrapped here.
                limit: At most this many.

            Returns:
                The count.
            """
        )
        self.assertEqual(summary, "Count words in a text.")
        self.assertEqual(args, {"text": "The text, wrapped here.", "limit": "At most this many."})
        self.assertEqual(parse_doc(None), ("", {}))


class Checks(unittest.TestCase):
    @staticmethod
    def shapes() -> FunctionTool:
        @tool
        def shapes(points: list[Point], color: Color, mode: Literal["fast", "exact"] = "fast", n: int = 1) -> dict:
            """Shapes."""
            return {"points": points, "color": color, "mode": mode, "n": n}

        return shapes

    def test_arguments_become_python_values(self) -> None:
        got = self.shapes().run({"points": [{"x": 1, "y": 2}, {"x": 3}], "color": "red", "n": 4.0})
        self.assertEqual(got["points"], [Point(1.0, 2.0), Point(3.0, 0.0)])
        self.assertIsInstance(got["points"][0].x, float)
        self.assertIs(got["color"], Color.RED)
        self.assertEqual((got["mode"], got["n"]), ("fast", 4))
        self.assertIsInstance(got["n"], int)

    def test_arguments_that_do_not_fit_are_input_errors_saying_where(self) -> None:
        shapes = self.shapes()
        cases = [
            ({"points": [{"x": "1"}], "color": "red"}, "points[0].x: expected a number, not a string"),
            ({"points": [], "color": "blue"}, 'color: expected one of "red", "green", not "blue"'),
            ({"points": [], "color": "red", "mode": "slow"}, 'mode: expected one of "fast", "exact", not "slow"'),
            ({"points": [], "color": "red", "n": 1.5}, "n: expected an integer, not 1.5"),
            ({"points": [], "color": "red", "n": True}, "n: expected an integer, not a boolean"),
            ({"points": {}, "color": "red"}, "points: expected an array, not an object"),
            ({"color": "red"}, "missing argument 'points'"),
            ({"points": [], "color": "red", "paht": 1}, "unexpected argument 'paht'"),
            ({"points": [{"x": 1, "z": 2}], "color": "red"}, "points[0]: unexpected field 'z'"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                with self.assertRaises(ToolInputError) as caught:
                    shapes.run(args)
                self.assertEqual(str(caught.exception), message)

    def test_exception_handler_by_its_type_hint(self) -> None:
        def errors(error: FileNotFoundError | PermissionError) -> str:
            return f"cannot read: {error}"

        @tool(exception_handler=errors)
        def read(path: str) -> str:
            """Read."""
            if path == "bug":
                raise ValueError("bug")
            raise FileNotFoundError("nope")

        with self.assertRaises(ToolError) as caught:
            read.run({"path": "x"})
        self.assertEqual(str(caught.exception), "cannot read: nope")
        with self.assertRaises(ValueError):
            read.run({"path": "bug"})
        strict = read.copy(exception_handler=None)
        with self.assertRaises(FileNotFoundError):
            strict.run({"path": "x"})

    def test_hints_for_narrows_and_checks_what_it_returns(self) -> None:
        def bash_hints(args):
            if args.get("command") in ("ls", "pwd"):
                return Hints(read_only=True)
            if args.get("command") == "odd":
                return "read-only"
            return None

        @tool(hints_for=bash_hints)
        def bash(command: str) -> str:
            """Bash."""
            return command

        self.assertTrue(bash.hints_for({"command": "ls"}).read_only)
        self.assertEqual(bash.hints_for({"command": "rm"}), bash.hints)
        self.assertFalse(bash.hints.read_only)
        self.assertTrue(bash._narrows_hints())
        with self.assertRaisesRegex(TypeError, "hints_for returned str, not Hints or None"):
            bash.hints_for({"command": "odd"})


class Results(unittest.TestCase):
    def test_each_kind_of_value(self) -> None:
        img = Image(PNG)
        self.assertEqual(img.mime_type, "image/png")
        self.assertEqual(to_contents("hi", "t"), [("text", "hi")])
        self.assertEqual(to_contents(None, "t"), [])
        self.assertEqual(to_contents(img, "t"), [("image", img)])
        self.assertEqual(
            to_contents(["Page loaded", img, {"k": 1}], "t"),
            [("text", "Page loaded"), ("image", img), ("json", '{"k": 1}')],
        )
        self.assertEqual(to_contents(["a", "b"], "t"), [("json", '["a", "b"]')])
        self.assertEqual(to_contents({"p": Point(1, 2), "c": Color.RED}, "t"),
                         [("json", '{"p": {"x": 1, "y": 2}, "c": "red"}')])
        self.assertEqual(to_contents(3, "t"), [("json", "3")])

    def test_a_value_that_cannot_become_json_is_a_type_error(self) -> None:
        for value in ({1, 2}, object(), float("nan")):
            with self.subTest(value=value), self.assertRaisesRegex(TypeError, "tool 't' returned"):
                to_contents(value, "t")
        with self.assertRaises(ValueError):
            Image(b"not an image")
        self.assertEqual(Image(b"x", "image/svg+xml").mime_type, "image/svg+xml")


class Hints_(unittest.TestCase):
    def test_defaults_and_consistency(self) -> None:
        self.assertEqual(
            Hints(),
            Hints(read_only=False, destructive=True, idempotent=False, open_world=True),
        )
        h = Hints(read_only=True)
        self.assertEqual((h.destructive, h.idempotent, h.open_world), (False, True, True))
        with self.assertRaises(ValueError):
            Hints(read_only=True, destructive=True)
        with self.assertRaises(ValueError):
            Hints(read_only=True, idempotent=False)
        with self.assertRaises(TypeError):
            Hints(read_only=1)

        @dataclass(frozen=True)
        class FileHints(Hints):
            paths: tuple[str, ...] = ()

        self.assertTrue(FileHints(read_only=True, paths=("a",)).idempotent)

    def test_tool_hints(self) -> None:
        @tool(read_only=True, open_world=False)
        def f() -> None:
            """F."""

        self.assertEqual(
            (f.read_only, f.destructive, f.idempotent, f.open_world), (True, False, True, False)
        )
        with self.assertRaises(ValueError):
            tool(read_only=True, destructive=True)(f.fn)


class BadTools(unittest.TestCase):
    """Every mistake the page lists raises when @tool or Tool.__init__ runs."""

    def assertRefused(self, make, *parts: str, error: type = TypeError) -> None:
        with self.assertRaises(error) as caught:
            make()
        for part in parts:
            self.assertIn(part, str(caught.exception))

    def test_functions_that_cannot_be_tools(self) -> None:
        def untyped(path) -> str:
            return path

        def star(*paths: str) -> str:
            return ""

        def kw(**more: str) -> str:
            return ""

        def pos(a: str, /) -> str:
            return a

        def unsupported(a: tuple[int, int]) -> str:
            return ""

        def union(a: int | str) -> str:
            return ""

        def state(path: str, state: State) -> str:
            return path

        async def later(a: str) -> str:
            return a

        def bad_doc(a: str) -> str:
            """A.

            Args:
                b: not a parameter
            """
            return a

        self.assertRefused(lambda: tool(untyped), "untyped", "'path' needs a type hint")
        self.assertRefused(lambda: tool(star), "star", "*paths")
        self.assertRefused(lambda: tool(kw), "kw", "**more")
        self.assertRefused(lambda: tool(pos), "pos", "positional-only")
        self.assertRefused(lambda: tool(unsupported), "unsupported", "is not supported")
        self.assertRefused(lambda: tool(union), "union", "T | None")
        self.assertRefused(lambda: tool(state), "state", "is a State", "sandboxed", "granted folder")
        self.assertRefused(lambda: tool(later), "later", "async def is not supported")
        self.assertRefused(lambda: tool(bad_doc), "bad_doc", "'b'", "not a parameter")
        self.assertRefused(lambda: tool(tool(untyped.__class__)), "takes a function")
        self.assertRefused(lambda: tool(lambda a: a), "needs a type hint")

    def test_pydantic_like_models_are_refused_saying_why(self) -> None:
        class Order:
            model_json_schema = classmethod(lambda cls: {})

        def buy(order: Order) -> str:
            return ""

        self.assertRefused(lambda: tool(buy), "buy", "Pydantic", "native code", "dataclass or a TypedDict")

    def test_options(self) -> None:
        def f(a: str) -> str:
            """F."""
            return a

        def no_hint(error) -> str:
            return ""

        def not_exc(error: int) -> str:
            return ""

        self.assertRefused(lambda: tool(tool(f)), "applied twice")
        self.assertRefused(lambda: tool(name="résumé")(f), "'résumé' is not allowed", "1 to 64")
        self.assertRefused(lambda: tool(name="")(f), "is not allowed")
        self.assertRefused(lambda: tool(parallel="yes")(f), "parallel")
        self.assertRefused(lambda: tool(read_only="yes")(f), "read_only")
        self.assertRefused(lambda: tool(exception_handler=no_hint)(f), "exception_handler")
        self.assertRefused(lambda: tool(exception_handler=not_exc)(f), "exception_handler")
        self.assertRefused(lambda: tool(exception_handler="x")(f), "exception_handler")
        self.assertRefused(lambda: tool(hints_for=lambda a, b: None)(f), "hints_for")
        self.assertRefused(lambda: tool(hints_for=3)(f), "hints_for")
        self.assertRefused(lambda: tool(f).copy(colour="red"), "'colour'")
        self.assertRefused(lambda: tool(bogus=1), "bogus")
        self.assertEqual(tool(f).copy(name="g").name, "g")

    def test_tool_subclasses(self) -> None:
        class Webhook(Tool):
            def __init__(self) -> None:
                super().__init__(name="webhook", input_schema={"type": "object", "properties": {}})

            def run(self, args: dict) -> dict:
                return args

        class NoSuper(Tool):
            def __init__(self) -> None:
                pass

            def run(self, args: dict) -> None:
                return None

        class NoRun(Tool):
            def __init__(self) -> None:
                super().__init__(name="norun")

        class WithState(Tool):
            def __init__(self) -> None:
                super().__init__(name="withstate")

            def run(self, args: dict, state: State) -> None:
                return None

        Webhook()._check_exportable()
        self.assertEqual(Webhook().run({"a": 1}), {"a": 1})
        self.assertRefused(lambda: NoSuper()._check_exportable(), "NoSuper", "super().__init__")
        self.assertRefused(lambda: NoRun()._check_exportable(), "NoRun does not define run")
        self.assertRefused(lambda: WithState()._check_exportable(), "WithState.run", "State")
        self.assertRefused(lambda: Tool(name="x", input_schema={"type": "array"}), "not an object schema")
        self.assertRefused(lambda: Tool(name="x", description=3), "description")
        self.assertRefused(lambda: Tool(name="x", read_only=True, idempotent=False), error=ValueError)
        self.assertEqual(Tool(name="x").input_schema, {"type": "object", "properties": {}})


class Collecting(unittest.TestCase):
    def module(self, **names):
        import types

        module = types.ModuleType("user_tools")
        module.__dict__.update(names)
        return module

    def test_every_module_level_tool_in_order(self) -> None:
        @tool
        def a() -> None:
            """A."""

        @tool
        def b() -> None:
            """B."""

        found = collect(self.module(b=b, a=a, again=b, other=3), "tools.py")
        self.assertEqual([t.name for t in found], ["b", "a"])

    def test_no_tools_or_two_with_one_name(self) -> None:
        @tool
        def a() -> None:
            """A."""

        with self.assertRaisesRegex(TypeError, "tools.py defines no tools"):
            collect(self.module(x=1), "tools.py")
        with self.assertRaisesRegex(TypeError, "two tools are named 'a'"):
            collect(self.module(a=a, b=a.copy()), "tools.py")

    def test_build_errors_name_the_file_and_line(self) -> None:
        try:
            exec(compile("\n\nraise TypeError('bad')\n", "/1/piton_main.py", "exec"), {})
        except TypeError as error:
            self.assertEqual(describe(error, {"/1/piton_main.py": "tools.py"}), "tools.py:3: TypeError: bad")
        error = ModuleNotFoundError("No module named 'pydantic'", name="pydantic")
        self.assertIn("pydantic-core is native code", describe(error, {}))


if __name__ == "__main__":
    unittest.main()
