"""What a tool returns, as content blocks: a str as text, None as nothing (the host
says "(done)"), an Image as an image, a list holding an Image as text, images and JSON
text, anything else as JSON. A value that cannot become JSON raises TypeError."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any


class Image:
    """An image returned to the model: its bytes and media type (PNG, JPEG, GIF and
    WebP are recognized from the bytes when `mime_type` is not given)."""

    __slots__ = ("data", "mime_type")

    def __init__(self, data: bytes, mime_type: str | None = None) -> None:
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        if not isinstance(data, bytes):
            raise TypeError(f"Image takes bytes, not {type(data).__name__}")
        if mime_type is None:
            mime_type = sniff_image(data)
            if mime_type is None:
                raise ValueError(
                    "Image: not a PNG, JPEG, GIF or WebP image: give mime_type=..."
                )
        if not isinstance(mime_type, str) or "/" not in mime_type:
            raise TypeError(f"Image: mime_type must be a media type such as 'image/png', not {mime_type!r}")
        self.data = data
        self.mime_type = mime_type

    def __repr__(self) -> str:
        return f"Image({self.mime_type}, {len(self.data)} bytes)"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Image)
            and other.data == self.data
            and other.mime_type == self.mime_type
        )

    __hash__ = None  # type: ignore[assignment]


def sniff_image(data: bytes) -> str | None:
    """The media type of an image's bytes, or None when not one piton recognizes."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _plain(value: Any) -> Any:
    """`json.dumps`'s `default`: dataclasses as objects, enums as their values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        raise TypeError(f"a {type(value).__name__} is not JSON (use a list)")
    raise TypeError(f"a {type(value).__name__} is not JSON")


def to_json(value: Any, tool: str) -> str:
    """`value` as JSON text, or TypeError naming the tool."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, default=_plain)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"tool {tool!r} returned {_a(value)}, which cannot become JSON: {error}"
        ) from None


def _a(value: Any) -> str:
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def to_contents(value: Any, tool: str) -> list[tuple[str, Any]]:
    """The content blocks of a result: ("text", str), ("json", str) or ("image", Image)."""
    if isinstance(value, str):
        return [("text", value)]
    if value is None:
        return []
    if isinstance(value, Image):
        return [("image", value)]
    if isinstance(value, list) and any(isinstance(v, Image) for v in value):
        blocks: list[tuple[str, Any]] = []
        for item in value:
            if isinstance(item, str):
                blocks.append(("text", item))
            elif isinstance(item, Image):
                blocks.append(("image", item))
            else:
                blocks.append(("json", to_json(item, tool)))
        return blocks
    return [("json", to_json(value, tool))]
