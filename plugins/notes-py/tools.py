"""A small notes toolbox: four tools in one component, over the folder piton.toml
grants them (seen inside the sandbox as /notes). Build it with `piton build
plugins/notes-py`; see README.md for the grants."""

import re
from pathlib import Path

from piton import Hints, ToolError, ToolInputError, tool

NOTES = Path("/notes")
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def note(name: str) -> Path:
    """The file of the note `name`; a name that is not a plain word is an input error."""
    if not NAME.fullmatch(name):
        raise ToolInputError(f"name {name!r}: use 1 to 64 letters, digits, '-' or '_'")
    return NOTES / f"{name}.txt"


def no_such_note(error: FileNotFoundError) -> str:
    return f"no note named {Path(error.filename or '').stem!r}"


@tool(read_only=True, open_world=False)
def list_notes() -> list[str]:
    """List the names of the notes, sorted."""
    if not NOTES.is_dir():
        raise ToolError("no notes folder: grant one in piton.toml (see the README)")
    return sorted(p.stem for p in NOTES.glob("*.txt"))


@tool(read_only=True, open_world=False, exception_handler=no_such_note)
def read_note(name: str) -> str:
    """Read one note.

    Args:
        name: The note's name, as list_notes shows it.
    """
    return note(name).read_text(encoding="utf-8")


def add_hints(args):
    # Without overwrite=true the call only adds: piton then mounts the folder add-only,
    # so even a bug in add_note cannot replace an existing note.
    if args.get("overwrite") is not True:
        return Hints(destructive=False, open_world=False)
    return None


def exists(error: PermissionError | FileExistsError) -> str:
    return "that note exists: pass overwrite=true to replace it"


@tool(open_world=False, hints_for=add_hints, exception_handler=exists)
def add_note(name: str, text: str, overwrite: bool = False) -> str:
    """Write a note.

    Args:
        name: The note's name: letters, digits, '-' or '_'.
        text: What the note says.
        overwrite: Replace the note of that name if there is one.
    """
    path = note(name)
    path.write_text(text, encoding="utf-8")
    return f"saved {name}"


def delete_hints(args):
    if args.get("dry_run") is True:
        return Hints(read_only=True, open_world=False)
    return None


@tool(destructive=True, idempotent=True, open_world=False, hints_for=delete_hints)
def delete_note(name: str, dry_run: bool = False) -> str:
    """Delete a note.

    Args:
        name: The note's name.
        dry_run: Only say what would be deleted.
    """
    path = note(name)
    if not path.is_file():
        raise ToolError(f"no note named {name!r}")
    if dry_run:
        return f"would delete {name}"
    path.unlink()
    return f"deleted {name}"
