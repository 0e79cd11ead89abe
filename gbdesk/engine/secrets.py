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

**A server may quote the key back** ("Incorrect API key provided: sk-…" in a 401, a 500
naming it): `Redactor` masks the secret gbdesk sent — the key, or a password in the URL —
in everything the server sends, and in every error text about a request, before anything
reads it. It is applied at one point, `gbdesk.engine.http.transport.Transport`, which every
reply and every failure passes through, so no message printed, stored (`runs.error`, an
endpoint's capability notes) or logged can hold it. The whole secret and any piece of it of
`REDACT_MIN` characters or more are masked.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

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


#: the shortest piece of a secret that is masked (shorter ones also occur by chance)
REDACT_MIN = 10
#: what stands for a masked secret in a message
MASK = "[secret hidden]"
#: bodies longer than this are masked for the whole secret only (its pieces cost a scan)
_PIECES_UP_TO = 1 << 20


class Redactor:
    """Masks the secrets gbdesk sent (see the module) in texts and bytes."""

    def __init__(self, secrets: list[str | None]):
        found = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self._whole = [s.encode() for s in found]
        pieces = {
            s[i : i + REDACT_MIN] for s in found if len(s) >= REDACT_MIN
            for i in range(len(s) - REDACT_MIN + 1)
        }  # fmt: skip
        self._pieces = (
            re.compile(b"|".join(re.escape(p.encode()) for p in sorted(pieces))) if pieces else None
        )

    def __bool__(self) -> bool:
        return bool(self._whole)

    def data(self, body: bytes) -> bytes:
        """`body` with every secret, and every piece of one (`REDACT_MIN`+), masked; in a
        JSON body also where escapes spell it (``sk\\u002d…``, which the bytes do not show)."""
        if not self._whole:
            return body
        if b"\\u" in body and len(body) <= _PIECES_UP_TO and body.lstrip()[:1] in (b"{", b"["):
            body = self._json(body)
        for whole in self._whole:
            body = body.replace(whole, MASK.encode())
        if len(body) > _PIECES_UP_TO:
            return body
        return self._pieces_masked(body)

    def _pieces_masked(self, body: bytes) -> bytes:
        """`body` with every piece of a secret (`REDACT_MIN`+ characters) masked."""
        if self._pieces is None:
            return body
        spans: list[list[int]] = []
        for m in self._scan(body):
            if spans and m[0] <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], m[1])
            else:
                spans.append([m[0], m[1]])
        if not spans:
            return body
        out, at = [], 0
        for start, end in spans:
            out += [body[at:start], MASK.encode()]
            at = end
        out.append(body[at:])
        return b"".join(out)

    def _json(self, body: bytes) -> bytes:
        """A JSON body with its strings decoded, masked and encoded again (unchanged when
        nothing was masked or it is not JSON)."""
        import json

        try:
            value = json.loads(body)
        except ValueError:
            return body
        changed = [False]

        def mask(v: object) -> object:
            if isinstance(v, str):
                out = self._plain(v)
                changed[0] = changed[0] or out != v
                return out
            if isinstance(v, list):
                return [mask(x) for x in v]
            if isinstance(v, dict):
                return {mask(k): mask(x) for k, x in v.items()}
            return v

        masked = mask(value)
        return json.dumps(masked).encode() if changed[0] else body

    def _plain(self, text: str) -> str:
        data = text.encode("utf-8", "surrogatepass")
        for whole in self._whole:
            data = data.replace(whole, MASK.encode())
        return self._pieces_masked(data).decode("utf-8", "replace")

    def _scan(self, body: bytes) -> list[tuple[int, int]]:
        """Every (start, end) of a piece of a secret in `body`, overlapping ones too."""
        assert self._pieces is not None
        found, at = [], 0
        while True:
            m = self._pieces.search(body, at)
            if m is None:
                return found
            found.append((m.start(), m.end()))
            at = m.start() + 1

    def text(self, text: str) -> str:
        """`text` with every secret masked (as `data`)."""
        if not self._whole:
            return text
        return self.data(text.encode("utf-8", "surrogatepass")).decode("utf-8", "replace")


def url_password(url: str) -> str | None:
    """The password of a ``user:password@`` URL (gbdesk refuses such URLs; masked all the
    same, should one ever be sent)."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None
