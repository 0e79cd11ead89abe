"""Endpoint addresses: the API base URL of what a person typed, and the ``URL#model``
spec by which the model catalogue and `resolve_model` name an endpoint model."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from gbdesk.engine.endpoints import ENDPOINT_PRESETS
from gbdesk.support.errors import UserError


def normalize_base_url(url: str) -> str:
    """The API base URL (``scheme://host:port/v1``) of what a person typed.

    A preset's name (`ENDPOINT_PRESETS`: ollama, lmstudio, llama-server) is its local
    address. A bare server address gets ``/v1``; a full ``…/chat/completions`` URL is cut
    back to its base. Credentials, query strings and fragments are refused: a key belongs in an
    environment variable or the keyring, never in a URL that gets recorded.
    """
    text = (url or "").strip()
    if text.lower() in ENDPOINT_PRESETS:
        return ENDPOINT_PRESETS[text.lower()][1]
    if not re.match(r"^https?://", text, re.I):
        presets = ", ".join(ENDPOINT_PRESETS)
        raise UserError(
            "an endpoint URL starts with http:// or https://, e.g. http://host:8000/v1 "
            f"(or name a local server: {presets})"
        )
    try:
        parts = urlsplit(text)
        host = parts.hostname
        _ = parts.port  # ValueError for a malformed port
    except ValueError:
        raise UserError("the endpoint URL is malformed (check the host and port)") from None
    if parts.username or parts.password:
        raise UserError(
            "put the API key in an environment variable (--api-key-env VAR) or the keyring, "
            "not in the endpoint URL"
        )
    if parts.query or parts.fragment:
        raise UserError(
            "give the API's base URL without a query string or #fragment, e.g. http://host:8000/v1"
        )
    if not host:
        raise UserError("the endpoint URL has no host name")
    path = re.sub(r"/+$", "", parts.path)
    for suffix in ("/chat/completions", "/completions", "/models"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path or "/v1", "", ""))


def endpoint_spec(base_url: str, model: str) -> str:
    """``URL#model``: how the model catalogue and `resolve_model` name an endpoint model."""
    return f"{normalize_base_url(base_url)}#{model}"


def parse_endpoint_spec(spec: str | None) -> tuple[str, str | None] | None:
    """(base URL, model name or None) for an ``http(s)://…[#model]`` spec, else None."""
    if not spec or not re.match(r"^https?://", spec.strip(), re.I):
        return None
    url, sep, model = spec.strip().partition("#")
    return normalize_base_url(url), (model.strip() or None) if sep else None
