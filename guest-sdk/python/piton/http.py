"""HTTP requests from a piton Python tool, through wasi:http: blocking, whole
responses, the host deciding which hosts each tool may reach (piton.toml
`network = ["example.com"]`).

    from piton import http, tool

    def http_errors(error: http.HTTPError) -> str:
        return f"request failed: {error}"

    @tool(exception_handler=http_errors)
    def fetch_url(url: str) -> str:
        return http.get(url).raise_for_status().text

A file that imports `piton.http` is built with the world that imports
`wasi:http/outgoing-handler`; one that does not cannot make requests at all."""

from __future__ import annotations

from typing import Any

from componentize_py_types import Err
from wit_world.imports import http_types as wasi
from wit_world.imports import outgoing_handler
from wit_world.imports import streams

from ._http import (
    HTTPError,
    HTTPStatusError,
    InvalidURL,
    NetworkDenied,
    NetworkError,
    Response,
    body_bytes,
    header_list,
    network_error,
    split_url,
)

__all__ = [
    "HTTPError",
    "HTTPStatusError",
    "InvalidURL",
    "NetworkDenied",
    "NetworkError",
    "Response",
    "delete",
    "get",
    "head",
    "post",
    "put",
    "request",
]

_METHODS = {
    "GET": wasi.Method_Get,
    "HEAD": wasi.Method_Head,
    "POST": wasi.Method_Post,
    "PUT": wasi.Method_Put,
    "DELETE": wasi.Method_Delete,
    "OPTIONS": wasi.Method_Options,
    "PATCH": wasi.Method_Patch,
}
_CHUNK = 4096  # wasi:io lets a blocking write take at most 4096 bytes
_NS = 1_000_000_000
#: The default most bytes of a response body read: larger is a NetworkError, not a
#: trap at the memory limit (piton's default is 64 MiB for the whole interpreter).
MAX_BYTES = 10 << 20


def get(url: str, *, headers: Any = None, timeout: float | None = 30.0,
        max_bytes: int = MAX_BYTES) -> Response:
    return request("GET", url, headers=headers, timeout=timeout, max_bytes=max_bytes)


def head(url: str, *, headers: Any = None, timeout: float | None = 30.0,
         max_bytes: int = MAX_BYTES) -> Response:
    return request("HEAD", url, headers=headers, timeout=timeout, max_bytes=max_bytes)


def post(url: str, *, body: bytes | str | None = None, json: Any = None, headers: Any = None,
         timeout: float | None = 30.0, max_bytes: int = MAX_BYTES) -> Response:
    return request("POST", url, body=body, json=json, headers=headers, timeout=timeout,
                   max_bytes=max_bytes)


def put(url: str, *, body: bytes | str | None = None, json: Any = None, headers: Any = None,
        timeout: float | None = 30.0, max_bytes: int = MAX_BYTES) -> Response:
    return request("PUT", url, body=body, json=json, headers=headers, timeout=timeout,
                   max_bytes=max_bytes)


def delete(url: str, *, headers: Any = None, timeout: float | None = 30.0,
           max_bytes: int = MAX_BYTES) -> Response:
    return request("DELETE", url, headers=headers, timeout=timeout, max_bytes=max_bytes)


def request(method: str, url: str, *, body: bytes | str | None = None, json: Any = None,
            headers: Any = None, timeout: float | None = 30.0, max_bytes: int = MAX_BYTES) -> Response:
    """Sends one request and reads the whole response. Redirects are not followed
    (each hop would be a request the host checks anyway: make it yourself).

    `timeout` (seconds) bounds connecting, the first byte and each gap between bytes;
    the host's own limits still apply. A body longer than `max_bytes` is a
    NetworkError (code "http-response-body-size"). Raises InvalidURL, NetworkDenied
    when the sandbox refuses the request, NetworkError when it gets no response; a
    non-2xx status is a Response (call `raise_for_status()` to raise
    HTTPStatusError). A bad method, header or body is a ValueError or TypeError: a
    bug in the tool, which stops the run."""
    method = method.upper() if isinstance(method, str) else method
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not one of {', '.join(_METHODS)}")
    tls, authority, path = split_url(url)
    fields = header_list(headers)
    data = body_bytes(body, json, fields)
    try:
        request_headers = wasi.Fields.from_list(fields)
    except Err as error:
        why = type(error.value).__name__.removeprefix("HeaderError_")
        names = ", ".join(name for name, _ in fields)
        raise ValueError(f"the headers {names} are refused by wasi:http ({why})") from None
    outgoing = wasi.OutgoingRequest(request_headers)
    try:
        outgoing.set_method(_METHODS[method]())
        outgoing.set_scheme(wasi.Scheme_Https() if tls else wasi.Scheme_Http())
        outgoing.set_authority(authority)
        outgoing.set_path_with_query(path)
    except Err:
        raise InvalidURL(f"{url!r}: wasi:http refuses its host or path") from None
    options = None
    if timeout is not None:
        options = wasi.RequestOptions()
        ns = max(1, int(timeout * _NS))
        for setter in (options.set_connect_timeout, options.set_first_byte_timeout,
                       options.set_between_bytes_timeout):
            try:
                setter(ns)
            except Err:  # the host does not take this option: its own limit applies
                pass
    outgoing_body = outgoing.body()
    try:
        future = outgoing_handler.handle(outgoing, options)
    except Err as error:
        raise network_error(method, url, error.value) from None
    _write_body(outgoing_body, data, method, url)
    with future:
        future.subscribe().block()
        result = future.get()
    if result is None or isinstance(result, Err):  # not ready after block(), or taken
        raise network_error(method, url, wasi.ErrorCode_InternalError(None))
    if isinstance(result.value, Err):
        raise network_error(method, url, result.value.value)
    with result.value.value as response:
        status = response.status()
        with response.headers() as fields_in:
            names: dict[str, str] = {}
            for name, value in fields_in.entries():
                text = value.decode("latin-1")
                names[name.lower()] = f"{names[name.lower()]}, {text}" if name.lower() in names else text
        declared = names.get("content-length", "")
        if method != "HEAD" and declared.isdigit() and int(declared) > max_bytes:
            raise _too_big(method, url, max_bytes)
        content = _read_body(response.consume(), method, url, max_bytes)
    return Response(method, url, status, names, content)


def _write_body(body: Any, data: bytes | None, method: str, url: str) -> None:
    if data:
        with body.write() as stream:
            for start in range(0, len(data), _CHUNK):
                try:
                    stream.blocking_write_and_flush(data[start:start + _CHUNK])
                except Err:
                    break  # the request failed: its future says why
    try:
        wasi.OutgoingBody.finish(body, None)
    except Err as error:
        raise network_error(method, url, error.value) from None


def _too_big(method: str, url: str, max_bytes: int) -> NetworkError:
    return NetworkError(
        f"{method} {url}: the response body is larger than max_bytes ({max_bytes} bytes)",
        "http-response-body-size",
    )


def _read_body(body: Any, method: str, url: str, max_bytes: int) -> bytes:
    chunks, size = [], 0
    with body:
        with body.stream() as stream:
            while True:
                try:
                    chunk = stream.blocking_read(65536)
                    size += len(chunk)
                    if size > max_bytes:
                        raise _too_big(method, url, max_bytes)
                    chunks.append(chunk)
                except Err as error:
                    if isinstance(error.value, streams.StreamError_Closed):
                        break
                    code = wasi.http_error_code(error.value.value)
                    raise network_error(method, url, code or wasi.ErrorCode_HttpResponseIncomplete()) from None
    return b"".join(chunks)
