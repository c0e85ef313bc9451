"""The pure-Python part of piton.http (piton/_http.py): URLs, headers, bodies, the
response and the exceptions; and how the build tells a file that uses HTTP. The
requests themselves go through wasi:http and are tested end to end in
tests/it/lang/python/http.rs.

    python3 -m unittest discover -s guest-sdk/python/tests
"""

import sys
import tempfile
import unittest
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from piton._http import (  # noqa: E402
    HTTPError,
    HTTPStatusError,
    InvalidURL,
    NetworkDenied,
    NetworkError,
    Response,
    body_bytes,
    code_name,
    header_list,
    network_error,
    split_url,
)
from piton import ToolError, tool  # noqa: E402
from piton.build import uses_http  # noqa: E402


@dataclass
class ErrorCode_HttpRequestDenied:  # noqa: N801 (the bindings' naming)
    pass


@dataclass
class ErrorCode_InternalError:  # noqa: N801
    value: str | None


class Urls(unittest.TestCase):
    def test_an_http_url_splits_into_authority_and_path(self) -> None:
        self.assertEqual(split_url("http://127.0.0.1:8080"), (False, "127.0.0.1:8080", "/"))
        self.assertEqual(split_url("HTTPS://example.com/a/b?q=1&r=2#frag"), (True, "example.com", "/a/b?q=1&r=2"))

    def test_credentials_in_the_url_are_never_sent(self) -> None:
        self.assertEqual(split_url("https://user:pw@example.com/x")[1], "example.com")

    def test_other_urls_are_invalid_and_http_errors(self) -> None:
        for url, words in [
            ("file:///etc/passwd", "only http:// and https://"),
            ("ftp://example.com/", "only http:// and https://"),
            ("example.com/page", "only http:// and https://"),
            ("http:///path", "has no host"),
            ("http://example.com:99999/", "not a valid URL"),
            ("http://example.com/a b", "whitespace"),
            ("http://example.com/\r\nX: y", "whitespace"),
        ]:
            with self.subTest(url=url), self.assertRaisesRegex(InvalidURL, words) as caught:
                split_url(url)
            self.assertIsInstance(caught.exception, HTTPError)
            self.assertIsInstance(caught.exception, ValueError)
        with self.assertRaisesRegex(TypeError, "must be a str"):
            split_url(b"http://example.com")  # type: ignore[arg-type]


class Requests(unittest.TestCase):
    def test_headers_are_a_dict_or_pairs(self) -> None:
        self.assertEqual(header_list(None), [])
        self.assertEqual(header_list({"Accept": "text/plain"}), [("Accept", b"text/plain")])
        self.assertEqual(header_list([("x-a", b"1"), ("x-a", "2")]), [("x-a", b"1"), ("x-a", b"2")])
        with self.assertRaisesRegex(TypeError, "dict or a list"):
            header_list(["nope"])
        with self.assertRaisesRegex(TypeError, "value a str or bytes"):
            header_list({"x": 1})

    def test_a_body_is_bytes_str_or_json(self) -> None:
        headers: list = []
        self.assertIsNone(body_bytes(None, None, headers))
        self.assertEqual(body_bytes("é", None, headers), "é".encode())
        self.assertEqual(body_bytes(None, {"a": [1]}, headers), b'{"a": [1]}')
        self.assertEqual(headers, [("content-type", b"application/json")])
        own = [("Content-Type", b"application/x")]
        body_bytes(None, 1, own)
        self.assertEqual(own, [("Content-Type", b"application/x")])
        with self.assertRaisesRegex(TypeError, "body or json, not both"):
            body_bytes("x", {}, [])
        with self.assertRaisesRegex(TypeError, "bytes or str, not int"):
            body_bytes(3, None, [])


class Responses(unittest.TestCase):
    def response(self, status: int, content: bytes, kind: str = "text/plain") -> Response:
        return Response("GET", "http://h/x", status, {"content-type": kind}, content)

    def test_text_json_and_content(self) -> None:
        r = self.response(200, '{"é": 1}'.encode())
        self.assertEqual((r.status, r.status_code, r.ok), (200, 200, True))
        self.assertEqual(r.json(), {"é": 1})
        self.assertEqual(r.text, '{"é": 1}')
        self.assertEqual(self.response(200, "é".encode("latin-1"), "text/plain; charset=ISO-8859-1").text, "é")
        self.assertEqual(self.response(200, b"\xff", "text/plain; charset=nonesuch").text, "\ufffd")
        self.assertEqual(self.response(200, b"\xff").text, "\ufffd")

    def test_raise_for_status_returns_a_2xx_response_and_raises_for_the_rest(self) -> None:
        ok = self.response(204, b"")
        self.assertIs(ok.raise_for_status(), ok)
        with self.assertRaises(HTTPStatusError) as caught:
            self.response(404, b"gone").raise_for_status()
        self.assertEqual(str(caught.exception), "HTTP 404 Not Found from GET http://h/x")
        self.assertEqual(caught.exception.response.text, "gone")
        self.assertIsInstance(caught.exception, HTTPError)
        self.assertNotIsInstance(caught.exception, ConnectionError)
        with self.assertRaisesRegex(HTTPStatusError, "^HTTP 599 from"):
            self.response(599, b"").raise_for_status()


class Failures(unittest.TestCase):
    def test_a_denied_request_is_network_denied_and_a_connection_error(self) -> None:
        error = network_error("POST", "http://h/", ErrorCode_HttpRequestDenied())
        self.assertIsInstance(error, NetworkDenied)
        self.assertIsInstance(error, ConnectionError)
        self.assertIsInstance(error, HTTPError)
        self.assertEqual(error.code, "http-request-denied")
        self.assertTrue(str(error).startswith("the sandbox denied POST http://h/: "), str(error))

    def test_other_codes_are_network_errors_named_by_their_wit_name(self) -> None:
        error = network_error("GET", "http://h/", ErrorCode_InternalError("boom"))
        self.assertIs(type(error), NetworkError)
        self.assertEqual(str(error), "GET http://h/ failed: internal error (boom)")
        self.assertEqual(code_name(ErrorCode_HttpRequestDenied()), "http-request-denied")

    def test_an_exception_handler_hinted_http_error_or_connection_error_takes_them(self) -> None:
        def http_errors(error: HTTPError | ConnectionError) -> str:
            return f"request failed: {error}"

        raised = {
            "denied": network_error("GET", "u", ErrorCode_HttpRequestDenied()),
            "status": HTTPStatusError("HTTP 404 Not Found from GET u", None),  # type: ignore[arg-type]
            "url": InvalidURL("bad url"),
            "bug": KeyError("bug"),
        }

        @tool(exception_handler=http_errors)
        def fetch_url(url: str) -> str:
            """Fetch."""
            raise raised[url]

        for url, start in [("denied", "request failed: the sandbox denied GET u"),
                           ("status", "request failed: HTTP 404"), ("url", "request failed: bad url")]:
            with self.subTest(url=url), self.assertRaises(ToolError) as caught:
                fetch_url.run({"url": url})
            self.assertTrue(str(caught.exception).startswith(start), str(caught.exception))
        with self.assertRaises(KeyError):  # not an HTTP error: it stops the run
            fetch_url.run({"url": "bug"})


class Building(unittest.TestCase):
    def test_a_file_uses_http_when_it_imports_piton_http(self) -> None:
        cases = {
            "from piton import http, tool\n": True,
            "from piton import tool\nimport piton.http\n": True,
            "from piton.http import get\n": True,
            "def f():\n    from piton import http\n": True,
            "from piton import tool\nimport http\n": False,
            "from . import http\n": False,
            "x = 'from piton import http'\n": False,
            "def broken(:\n": False,
        }
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "tools.py"
            for text, uses in cases.items():
                path.write_text(text)
                self.assertEqual(uses_http(path), uses, text)


if __name__ == "__main__":
    unittest.main()
