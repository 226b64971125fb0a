"""One exception type for bad user input, so entry points can print one line and exit non-zero."""


class PosbenchError(Exception):
    """A user-facing error: the message names the bad value and what would be valid."""
