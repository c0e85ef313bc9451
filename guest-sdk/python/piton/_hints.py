"""Hints: the four facts about a call (read-only, destructive, idempotent, open world),
with the seed page's defaults: a hint left out assumes the worst, and read_only=True
sets destructive=False and idempotent=True."""

from __future__ import annotations

from dataclasses import dataclass


def resolve_hints(
    read_only: bool | None,
    destructive: bool | None,
    idempotent: bool | None,
    open_world: bool | None,
    where: str = "Hints",
) -> tuple[bool, bool, bool, bool]:
    """The four hints as bools: defaults filled in, types and consistency checked."""
    for name, value in (
        ("read_only", read_only),
        ("destructive", destructive),
        ("idempotent", idempotent),
        ("open_world", open_world),
    ):
        if value is not None and not isinstance(value, bool):
            raise TypeError(
                f"{where}: {name} must be True, False or None, not {type(value).__name__}"
            )
    read_only = bool(read_only)
    if read_only and destructive is True:
        raise ValueError(f"{where}: read_only=True contradicts destructive=True")
    if read_only and idempotent is False:
        raise ValueError(f"{where}: read_only=True contradicts idempotent=False")
    if destructive is None:
        destructive = not read_only
    if idempotent is None:
        idempotent = read_only
    if open_world is None:
        open_world = True
    return read_only, destructive, idempotent, open_world


@dataclass(frozen=True, kw_only=True)
class Hints:
    """The four hints of one call: what running the tool with these arguments does.

    A hint left out assumes the worst (not read-only, destructive, not idempotent,
    open world), and read_only=True sets destructive=False and idempotent=True. After
    construction every hint is a bool. A subclass may carry more facts, but only these
    four cross the sandbox to the host.
    """

    read_only: bool = None  # type: ignore[assignment]
    destructive: bool = None  # type: ignore[assignment]
    idempotent: bool = None  # type: ignore[assignment]
    open_world: bool = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        values = resolve_hints(
            self.read_only, self.destructive, self.idempotent, self.open_world
        )
        for name, value in zip(
            ("read_only", "destructive", "idempotent", "open_world"), values
        ):
            object.__setattr__(self, name, value)
