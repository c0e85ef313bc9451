"""Builds a Python tool file into a piton component, on the build machine's Python:

    python3 -m piton.build tools.py -o tools.wasm --wit WIT_FOLDER

(`piton build tools.py` runs this with the SDK and wit/ it carries.) The file is never
imported here: componentize-py 0.25.1 imports it inside the component being built
(CPython 3.14 for WASI), where the decorators check every tool, and snapshots the
result. A refused file ends with exit status 1 and one line per problem on stderr,
`FILE:LINE: message`; success prints the tools built on stdout."""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

MARK = "piton-build-error: "
WORLD = "toolbox-plugin"
# A file that imports piton.http gets this world: the toolbox plus
# wasi:http/outgoing-handler (wit/http.wit, staged by piton build). Others import no
# HTTP at all.
HTTP_WORLD = "toolbox-plugin-http"
WASI = "0.2.12"  # the wasi:* version of the staged WIT, the one piton's host links
# Module names of the bindings, pinned: piton.http and _component import these.
INTERFACE_NAMES = [("piton:tool/types@0.1.2", "piton_types")]
HTTP_INTERFACE_NAMES = [
    (f"wasi:http/types@{WASI}", "http_types"),
    (f"wasi:http/outgoing-handler@{WASI}", "outgoing_handler"),
    (f"wasi:io/streams@{WASI}", "streams"),
    (f"wasi:io/poll@{WASI}", "poll"),
    (f"wasi:io/error@{WASI}", "io_error"),
]
MAIN = "piton_main"
RESERVED = {"piton", "wit_world", "componentize_py_types", "componentize_py_async_support",
            "componentize_py_runtime", "poll_loop", "piton_app", MAIN}

# Imported at build time so that run-time code finds them: a module not imported while
# the component is built is not in it. Chosen for what tools commonly use lazily.
STDLIB = [
    "_strptime", "base64", "bisect", "calendar", "collections", "copy", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "enum", "fnmatch", "fractions", "functools", "glob",
    "hashlib", "heapq", "html", "io", "itertools", "json", "linecache", "math", "operator",
    "os", "pathlib", "random", "re", "shutil", "statistics", "string", "struct", "textwrap",
    "time", "traceback", "typing", "unicodedata", "urllib.parse", "uuid", "zlib",
]


class Refused(Exception):
    """The source cannot be built; the message names the file and the problem."""


def scan_imports(path: Path, label: str) -> list[tuple[str, str, int]]:
    """Every module `path` imports, anywhere in it (imports inside functions run only
    at call time, when it is too late to add a module): (name, label, line)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=label)
    except SyntaxError as error:
        raise Refused(f"{label}:{error.lineno}: SyntaxError: {error.msg}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise Refused(f"{label}: cannot read it: {error}") from None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, label, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, label, node.lineno))
    return found


def uses_http(path: Path) -> bool:
    """Whether the file imports piton.http (`from piton import http`, `import
    piton.http`, `from piton.http import ...`)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, OSError, UnicodeDecodeError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "piton.http" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == "piton.http":
                return True
            if node.module == "piton" and any(a.name == "http" for a in node.names):
                return True
    return False


def scan_all(user: Path, labels: dict[str, str]) -> list[tuple[str, str, int]]:
    """The imports of the main file and of the local modules it imports, in turn."""
    local: dict[str, list[str]] = {}
    for rel in labels:
        local.setdefault(Path(rel).parts[0].removesuffix(".py"), []).append(rel)
    found: list[tuple[str, str, int]] = []
    todo, seen = [next(iter(labels))], set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        for name, label, line in scan_imports(user / rel, labels[rel]):
            top = name.split(".")[0]
            if top in local:
                todo += local[top]
            elif top != "piton":
                found.append((name, label, line))
    return found


def main_module(source: Path) -> str:
    """The module name the source is imported by inside the component: its own stem
    (so tracebacks name it), unless that would shadow the standard library or piton."""
    stem = source.stem
    if stem.isidentifier() and stem not in RESERVED and stem not in sys.stdlib_module_names:
        return stem
    return MAIN


def stage_user(source: Path, user: Path, label: str) -> dict[str, str]:
    """Copies the source file (as MAIN) and its sibling .py files and packages into
    `user`; returns {path inside the component: the name the user knows}."""
    folder = source.parent
    stem = main_module(source)
    labels: dict[str, str] = {}
    shutil.copyfile(source, user / f"{stem}.py")
    labels[f"{stem}.py"] = label
    for entry in sorted(folder.iterdir()):
        if entry == source or entry.name.startswith("."):
            continue
        if entry.suffix == ".py" and entry.is_file():
            if entry.stem in RESERVED or entry.stem in (stem, source.stem):
                continue
            shutil.copyfile(entry, user / entry.name)
            labels[entry.name] = str(Path(label).parent / entry.name)
        elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name not in RESERVED:
            shutil.copytree(entry, user / entry.name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.wasm"))
            for file in (user / entry.name).rglob("*.py"):
                rel = file.relative_to(user).as_posix()
                labels[rel] = str(Path(label).parent / rel)
    return labels


def write_app(app: Path, labels: dict[str, str], user_index: int, imports: list, label: str, main: str) -> None:
    files = {f"/{user_index}/{rel}": name for rel, name in labels.items()}
    text = f'''# Written by piton.build: runs once, while the component is built.
from piton import _component
_component.preimport({STDLIB!r})
with _component.build_errors({files!r}):
    _component.preimport_user({imports!r})
    import {main} as _user
    Toolbox = _component.toolbox(_user, {label!r}, "/0/specs.json")
'''
    (app / "piton_app.py").write_text(text, encoding="utf-8")


def build(source: Path, out: Path, wit: Path, python_path: list[Path], label: str | None = None) -> list[dict]:
    """Builds `source` into `out`; returns the tools' specs. Raises Refused."""
    try:
        import componentize_py
    except ImportError:
        raise Refused(
            f"componentize-py 0.25.1 is not installed for {sys.executable}; install it with: "
            f"{sys.executable} -m pip install componentize-py==0.25.1"
        ) from None
    if not source.is_file():
        raise Refused(f"{source}: no such file")
    label = label or source.name
    sdk = Path(__file__).resolve().parent.parent
    imports: list[tuple[str, str, int]] = []
    with tempfile.TemporaryDirectory(prefix="piton-build-py-") as stage:
        stage_dir = Path(stage)
        app, user = stage_dir / "app", stage_dir / "user"
        app.mkdir()
        user.mkdir()
        labels = stage_user(source, user, label)
        imports = scan_all(user, labels)
        sdk_copy = stage_dir / "sdk"
        shutil.copytree(sdk / "piton", sdk_copy / "piton",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build.py"))
        http = any(uses_http(user / rel) for rel in labels)
        if http:
            imports.insert(0, ("piton.http", label, 1))
        write_app(app, labels, 1, imports, label, main_module(source))
        paths = [str(app), str(user), str(sdk_copy)] + [str(p) for p in python_path]
        try:
            componentize_py.componentize(
                wit_path=[str(wit)], worlds=[HTTP_WORLD if http else WORLD], features=[],
                all_features=False, world_module=None, python_path=paths, module_worlds=[],
                app_name="piton_app", output_path=str(out), stub_wasi=False,
                import_interface_names=INTERFACE_NAMES + (HTTP_INTERFACE_NAMES if http else []),
                export_interface_names=[], full_names=False, intersect_world=None,
            )
        except BaseException as error:  # componentize-py raises AssertionError
            raise Refused(_failure(str(error), label)) from None
        specs_file = app / "specs.json"
        return json.loads(specs_file.read_text(encoding="utf-8")) if specs_file.is_file() else []


def _failure(text: str, label: str) -> str:
    marked = [line[len(MARK):] for line in text.splitlines() if line.startswith(MARK)]
    if marked:
        return "\n".join(dict.fromkeys(marked))
    lines = [line for line in text.splitlines() if line.strip()][:40]
    return f"{label}: componentize-py failed:\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m piton.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="the Python file of @tool functions and Tool instances")
    parser.add_argument("-o", "--output", type=Path, help="the .wasm to write (default: beside the source)")
    parser.add_argument("--wit", type=Path, required=True, help="the folder holding piton's tool.wit")
    parser.add_argument("--label", help="the source's name in messages (default: its file name)")
    parser.add_argument("--python-path", type=Path, action="append", default=[],
                        help="a folder of pure-Python packages to put in the component")
    args = parser.parse_args(argv)
    out = args.output or args.source.with_suffix(".wasm")
    try:
        specs = build(args.source.resolve(), out.resolve(), args.wit.resolve(), args.python_path, args.label)
    except Refused as error:
        print(error, file=sys.stderr)
        return 1
    size = os.path.getsize(out) / 1e6
    names = ", ".join(spec["name"] for spec in specs)
    print(f"built {out} ({size:.1f} MB): {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
