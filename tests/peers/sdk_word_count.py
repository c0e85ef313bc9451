"""The `word_count` tool of `piton new --lang python`, served natively by the official
Python SDK (MCPServer over stdio): what the `python` bench compares a piton-served
Python tool with.

    <target>/peers/venv/bin/python tests/peers/sdk_word_count.py

The function body is the template's (guest-sdk/templates/python/tools.py); the SDK
checks the arguments against the schema it makes from the signature, as piton does.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("piton-bench-sdk-word-count")


@server.tool(
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    structured_output=False,
)
def word_count(text: str, min_length: int = 1) -> int:
    """Count the words in a text."""
    if min_length < 1:
        raise ToolError("min_length must be at least 1")
    return sum(1 for word in text.split() if len(word) >= min_length)


if __name__ == "__main__":
    server.run("stdio")
