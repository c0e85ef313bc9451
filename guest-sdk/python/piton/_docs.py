"""Docstrings: the first paragraph is the description, a Google-style `Args:` section
describes each parameter (`name: text` or `name (type): text`, deeper-indented lines
continue it)."""

from __future__ import annotations

import inspect
import re

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|Attributes):\s*$")
_ARGS = ("Args", "Arguments", "Parameters", "Params")
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_doc(doc: str | None) -> tuple[str, dict[str, str]]:
    """(the first paragraph with its lines joined by spaces, {parameter: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    paragraph: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        paragraph.append(line.strip())
    return " ".join(paragraph), _args(lines)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _args(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    i = 0
    while i < len(lines):
        match = _SECTION.match(lines[i].strip())
        if not match or match.group(1) not in _ARGS:
            i += 1
            continue
        header = _indent(lines[i])
        i += 1
        entry_indent = None
        name = None
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            indent = _indent(line)
            if indent <= header:
                break
            if entry_indent is None:
                entry_indent = indent
            if indent <= entry_indent:
                entry = _ENTRY.match(line.strip())
                if entry:
                    name = entry.group(1).lstrip("*")
                    found[name] = entry.group(3).strip()
                else:
                    name = None
            elif name is not None:
                found[name] = f"{found[name]} {line.strip()}".strip()
            i += 1
    return found
