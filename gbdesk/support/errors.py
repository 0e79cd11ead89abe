"""Exception types shared by the core, the CLI and the GUI."""

from __future__ import annotations


def short_repr(value: object, limit: int = 40) -> str:
    """`repr` of a value for a one-line message: cut to about `limit` characters, line
    breaks escaped; never raises (a 5,000-digit int is shown by its digit count)."""
    try:
        text = repr(value)
    except ValueError:  # int too long to print
        return "a number too long to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class GbdeskError(Exception):
    """Base class of every error gbdesk reports to a person."""


class UserError(GbdeskError):
    """Bad input from the user (missing file, unknown probe, malformed CSV…).

    The CLI prints the message on one line and exits with status 2.
    """


class EngineError(GbdeskError):
    """The model engine failed (worker crashed, ran out of memory, refused a request)."""


class EngineCrashed(EngineError):
    """The worker process died; whatever it was doing is lost, the run is resumable."""
