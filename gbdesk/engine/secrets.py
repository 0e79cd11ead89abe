"""API keys for HTTP endpoints: looked up at run time, never stored by gbdesk.

A key comes from, in this order:

1. the environment variable named for the endpoint (`--api-key-env VAR`, or the
   "API key env var" field of the Models pane),
2. `GBDESK_API_KEY`,
3. the operating system's keyring (the optional `keyring` package), service
   ``gbdesk``, user name = the endpoint's base URL — e.g.
   ``keyring set gbdesk http://gpu-box:8000/v1``.

Only the *name* of the variable (or the word "keyring") is written to the database and
to a run's engine record, so a run can be resumed with the same lookup; the key itself
never is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from gbdesk.support.errors import UserError

DEFAULT_ENV_VAR = "GBDESK_API_KEY"
KEYRING_SERVICE = "gbdesk"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ApiKey:
    """A looked-up key and where it came from (`source` is safe to record)."""

    value: str | None = field(repr=False)
    source: str  # "env:NAME", "keyring" or "none"

    def __bool__(self) -> bool:
        return bool(self.value)


def check_env_var_name(name: str | None) -> str | None:
    """Validate an environment-variable name; refuse what looks like a key pasted in."""
    if name is None or not name.strip():
        return None
    name = name.strip()
    if not _ENV_NAME.match(name) or len(name) > 100:
        # Do not echo the value: it may well be the key itself.
        raise UserError(
            "--api-key-env takes the NAME of an environment variable that holds the key "
            "(letters, digits and _), not the key itself"
        )
    return name


def _keyring_get(base_url: str) -> str | None:
    try:
        import keyring  # optional dependency
    except ImportError:
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, base_url)
    except Exception:  # no usable keyring backend (headless Linux, locked store …)
        return None


def keyring_available() -> bool:
    """Is the optional `keyring` package importable with a usable backend?"""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return False
    try:
        return not isinstance(keyring.get_keyring(), fail.Keyring)
    except Exception:
        return False


def save_api_key(base_url: str, key: str) -> None:
    """Store a key in the OS keyring (UserError when there is none)."""
    if not keyring_available():
        raise UserError(
            "no usable keyring here (pip install keyring, and a desktop keyring service); "
            f"put the key in an environment variable instead, e.g. {DEFAULT_ENV_VAR}"
        )
    import keyring

    keyring.set_password(KEYRING_SERVICE, base_url, key)


def lookup_api_key(base_url: str, env_var: str | None = None) -> ApiKey:
    """The API key for an endpoint, or `ApiKey(None, "none")` when there is none."""
    names = [n for n in (check_env_var_name(env_var), DEFAULT_ENV_VAR) if n]
    for name in dict.fromkeys(names):
        value = os.environ.get(name, "").strip()
        if value:
            return ApiKey(value, f"env:{name}")
    value = _keyring_get(base_url)
    if value:
        return ApiKey(value.strip(), "keyring")
    return ApiKey(None, "none")
