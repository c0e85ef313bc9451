"""piton: write agent tools in Python as the seed page's Tools API shows, and build
them with `piton build tools.py` into one sandboxed WebAssembly component.

    from piton import tool

    @tool(read_only=True, open_world=False)
    def read_file(path: str) -> str:
        \"\"\"Read a file's contents

        Args:
            path: Path relative to the repository root
        \"\"\"
        return Path(path).read_text()
"""

from ._errors import State, ToolError, ToolInputError
from ._hints import Hints
from ._result import Image
from ._tool import FunctionTool, Tool, ToolSpec, tool

__all__ = [
    "FunctionTool",
    "Hints",
    "Image",
    "State",
    "Tool",
    "ToolError",
    "ToolInputError",
    "ToolSpec",
    "tool",
]
