"""The exceptions a tool raises for a failure the model sees: ToolError (an error
result) and ToolInputError (the arguments are wrong: `(input error: ...)`). Any other
exception stops the run."""


class ToolError(Exception):
    """A failure the model should handle: it gets the message as an error result."""


class ToolInputError(ToolError):
    """The arguments are wrong: the model gets `(input error: message)`."""


class State:
    """The run's State on the seed page. A piton tool runs sandboxed, in a fresh
    instance for each call, and cannot reach it: a tool with a State parameter is
    refused at build time. It exists so that code written for the page imports."""

    def __init__(self, *args, **kwargs) -> None:
        raise TypeError(
            "piton tools cannot use State: each call runs sandboxed in a fresh instance"
        )
