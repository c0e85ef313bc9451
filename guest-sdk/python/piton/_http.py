"""The pure-Python part of `piton.http`: the response, the exceptions and the URL and
error-code handling, with no `wit_world` import (so they are tested on the build
machine's Python). `piton.http` sends requests through wasi:http with them.

Exceptions follow httpx's shape, so the seed page's `exception_handler` examples read
the same: `HTTPError` is the base of everything a request raises; `HTTPStatusError`
is a non-2xx status (from `raise_for_status()`); `NetworkError` (also a
`ConnectionError`) is a request that got no response, and `NetworkDenied` one the
sandbox refused."""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit


class HTTPError(Exception):
    """Anything a request from `piton.http` raises: catch this in an
    `exception_handler` to turn every HTTP failure into an error result."""


class InvalidURL(HTTPError, ValueError):
    """The URL is not an absolute http:// or https:// URL."""


class HTTPStatusError(HTTPError):
    """`raise_for_status()` on a response whose status is not 2xx."""

    def __init__(self, message: str, response: Response) -> None:
        super().__init__(message)
        self.response = response


class NetworkError(HTTPError, ConnectionError):
    """The request got no response: refused, timed out, reset, or denied."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        #: The wasi:http error code, e.g. "connection-refused".
        self.code = code


class NetworkDenied(NetworkError):
    """The sandbox refused the request: the tool has no network grant for the host,
    or a read-only call tried a method other than GET, HEAD and OPTIONS."""


class Response:
    """An HTTP response, read whole: `status`, `headers` (names in lower case, repeated
    values joined with ", "), `content` (bytes), `text`, `json()`."""

    def __init__(self, method: str, url: str, status: int, headers: dict[str, str], content: bytes) -> None:
        self.method = method
        self.url = url
        self.status = status
        self.status_code = status  # httpx's and requests' name
        self.headers = headers
        self.content = content

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def reason(self) -> str:
        try:
            return HTTPStatus(self.status).phrase
        except ValueError:
            return ""

    @property
    def encoding(self) -> str:
        found = re.search(r"charset=\"?([\w.:-]+)", self.headers.get("content-type", ""), re.I)
        return found.group(1) if found else "utf-8"

    @property
    def text(self) -> str:
        """The body decoded by the Content-Type's charset (UTF-8 if none); bytes that
        do not decode become U+FFFD."""
        try:
            return self.content.decode(self.encoding, errors="replace")
        except LookupError:  # a charset Python does not know
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)

    def raise_for_status(self) -> Response:
        """Returns the response if its status is 2xx, else raises HTTPStatusError."""
        if self.ok:
            return self
        reason = f" {self.reason}" if self.reason else ""
        raise HTTPStatusError(f"HTTP {self.status}{reason} from {self.method} {self.url}", self)

    def __repr__(self) -> str:
        return f"<Response [{self.status}]>"


def split_url(url: str) -> tuple[bool, str, str]:
    """(tls, authority, path with query) of an absolute http(s) URL; InvalidURL if not."""
    if not isinstance(url, str):
        raise TypeError(f"the URL must be a str, not {type(url).__name__}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError as error:
        raise InvalidURL(f"{url!r} is not a valid URL: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidURL(f"{url!r}: only http:// and https:// URLs can be fetched")
    if not parts.hostname:
        raise InvalidURL(f"{url!r} has no host")
    if any(c.isspace() or ord(c) < 0x20 for c in url):
        raise InvalidURL(f"{url!r} contains whitespace or control characters")
    authority = parts.netloc.rpartition("@")[2]  # never send user:password@
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme == "https", authority, path


def header_list(headers: Any) -> list[tuple[str, bytes]]:
    """A dict or a list of (name, value) pairs as wasi:http fields."""
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, dict) else headers
    out = []
    for item in items:
        try:
            name, value = item
        except (TypeError, ValueError):
            raise TypeError("headers must be a dict or a list of (name, value) pairs") from None
        if not isinstance(name, str) or not isinstance(value, (str, bytes)):
            raise TypeError(f"header {name!r}: the name must be a str and the value a str or bytes")
        out.append((name, value.encode("utf-8") if isinstance(value, str) else value))
    return out


def body_bytes(body: Any, json_value: Any, headers: list[tuple[str, bytes]]) -> bytes | None:
    """The request body: bytes or str as given, or `json` serialized (and its
    Content-Type added when the caller set none)."""
    if json_value is not None:
        if body is not None:
            raise TypeError("give body or json, not both")
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("content-type", b"application/json"))
        return json.dumps(json_value).encode("utf-8")
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    raise TypeError(f"body must be bytes or str, not {type(body).__name__}")


def code_name(code: Any) -> str:
    """`ErrorCode_ConnectionRefused()` → "connection-refused" (its WIT name)."""
    name = type(code).__name__.removeprefix("ErrorCode_")
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def network_error(method: str, url: str, code: Any) -> NetworkError:
    """The exception for a request that failed with wasi:http's error code `code`."""
    name = code_name(code)
    if name == "http-request-denied":
        return NetworkDenied(
            f"the sandbox denied {method} {url}: this tool has no network grant for that "
            "host (piton.toml: network = [...]), or a read-only call tried a method other "
            "than GET, HEAD and OPTIONS",
            name,
        )
    detail = getattr(code, "value", None)
    extra = f" ({detail})" if isinstance(detail, str) and detail else ""
    return NetworkError(f"{method} {url} failed: {name.replace('-', ' ')}{extra}", name)
