from piton import State, tool


@tool
def remember(note: str, state: State) -> str:
    """Keep a note in the run's State (cannot cross the sandbox: refused at build)."""
    return note
