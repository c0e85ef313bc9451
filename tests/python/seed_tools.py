"""Tools written as the seed page's Tools API examples show, with `from piton import`
in place of the page's package: each behaviour the page describes is checked in
tests/it/lang/python.rs."""

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Literal, TypedDict

from piton import Hints, Image, Tool, ToolError, ToolInputError, http, tool


@tool(read_only=True, open_world=False)
def read_file(path: str) -> str:
    """Read a file's contents

    Args:
        path: Path relative to the repository root
    """
    return Path(path).read_text()


def bash_hints(args):
    if args.get("command") in ("ls", "pwd"):
        return Hints(read_only=True)
    return None


@tool(hints_for=bash_hints)
def bash(command: str) -> str:
    """Run a shell command (here: only ls and pwd, listing the folder given)."""
    if command == "ls":
        return "\n".join(sorted(p.name for p in Path(".").iterdir()))
    if command == "pwd":
        return str(Path.cwd())
    raise ToolError(f"no shell in the sandbox: cannot run {command!r}")


def file_errors(error: FileNotFoundError | PermissionError) -> str:
    return f"cannot read it: {error.strerror}"


@tool(exception_handler=file_errors, read_only=True, open_world=False)
def fetch_file(path: str) -> str:
    """Read a file; a missing one is an error result, not a stopped run."""
    return Path(path).read_text()


# The page's fetch example; its httpx is piton.http here.
def http_errors(error: http.HTTPError) -> str:
    return f"request failed: {error}"


@tool(exception_handler=http_errors)
def fetch_url(url: str) -> str:
    return http.get(url).raise_for_status().text


@tool(exception_handler=http_errors)
def post_text(url: str, text: str) -> str:
    """Post text to a URL; answers the status and the reply."""
    response = http.post(url, body=text, headers={"content-type": "text/plain"}).raise_for_status()
    return f"{response.status} {response.text}"


# The same tool declared read-only: the host sends only GET, HEAD and OPTIONS for it.
post_text_read_only = post_text.copy(name="post_text_read_only", read_only=True)


@tool(read_only=True, open_world=False)
def save_note(path: str, text: str) -> str:
    """Try to write a file (declared read-only: the sandbox holds it to that)."""
    Path(path).write_text(text)
    return "saved"


class Color(Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: float
    y: float = 0.0


class Options(TypedDict):
    verbose: bool


@tool(read_only=True, open_world=False)
def shapes(
    points: list[Point],
    color: Color,
    mode: Literal["fast", "exact"] = "fast",
    tags: dict[str, int] | None = None,
    options: Options | None = None,
) -> dict:
    """Describe points.

    Args:
        points: The points, in order.
        color: Their color.
    """
    return {
        "n": len(points),
        "sum_x": sum(p.x for p in points),
        "color": color,
        "mode": mode,
        "tags": tags,
        "verbose": bool(options and options["verbose"]),
    }


@tool(read_only=True, open_world=False)
def results(kind: str) -> object:
    """Return each kind of value the page lists."""
    png = bytes.fromhex("89504e470d0a1a0a") + b"rest"
    if kind == "none":
        return None
    if kind == "image":
        return Image(png)
    if kind == "mixed":
        return ["Page loaded", Image(png), {"k": 1}]
    if kind == "list":
        return ["a", "b"]
    if kind == "set":
        return {1, 2}
    if kind == "crash":
        raise ValueError("a bug in the tool")
    if kind == "input":
        raise ToolInputError("kind is not right")
    return kind


class Webhook(Tool):
    def __init__(self, name, url):
        super().__init__(
            name=name,
            description="Post to a webhook (here: echo what would be posted).",
            input_schema={
                "type": "object",
                "properties": {"title": {"type": "string"}},
                "required": ["title"],
            },
            open_world=True,
        )
        self.url = url

    def run(self, args: dict) -> dict:
        if "title" not in args:
            raise ToolInputError("title is required")
        if args["title"] == "fail":
            raise ToolError("HTTP 500")
        return {"url": self.url, "posted": args}


webhook = Webhook("webhook", "https://example.invalid/hook")
