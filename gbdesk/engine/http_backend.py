"""The old path of the HTTP engine, now the package `gbdesk.engine.http` (transport,
replies, backend, scoring, urls, catalogue): a thin alias of its public names, kept for
code that still imports it from here."""

from gbdesk.engine.http import *  # noqa: F403
from gbdesk.engine.http import __all__  # noqa: F401
