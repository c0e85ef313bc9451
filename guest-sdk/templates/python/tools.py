"""__PROJECT__: piton tools written in Python. Every @tool function (and every instance
of a Tool subclass) at module level becomes one tool of the component that
`piton build` makes from this file."""

from piton import ToolInputError, tool


@tool(read_only=True, open_world=False)
def __NAME__(text: str, min_length: int = 1) -> int:
    """Count the words in a text.

    Args:
        text: The text to count the words of.
        min_length: Count only words at least this long.
    """
    if min_length < 1:
        raise ToolInputError("min_length must be at least 1")
    return sum(1 for word in text.split() if len(word) >= min_length)
