from piton import tool


@tool
def read_file(path):
    """Read a file (its parameter has no type hint: refused at build)."""
    return open(path).read()
