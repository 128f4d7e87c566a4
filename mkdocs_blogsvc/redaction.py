"""Tokens out of every message. Text built from what a service sent (an error's description, a
transport error's text) may repeat a token back, and it reaches logs, CI output and errors.
`redact` masks what is shaped like the spec's tokens, and every secret this process holds
(`hold`: the tokens read or received, the client secret) whatever its shape: a service may
issue tokens without the spec's prefixes, or with spaces in a refresh token."""

from __future__ import annotations

import re

#: The spec's prefixes, then a b64token (RFC 6750).
_TOKEN_PATTERN = re.compile(r"svc_(?:at|rt)_[A-Za-z0-9\-._~+/]+=*")
#: A shorter secret is not masked: it would mask ordinary words of a message (no token is that short).
_SHORTEST = 8
_held: set[str] = set()


def hold(*secrets: str | None) -> None:
    """Remember secrets this process has, for `redact` (a long `mkdocs serve` adds two per refresh)."""
    _held.update(secret for secret in secrets if secret and len(secret) >= _SHORTEST)


def redact(text: str) -> str:
    """`text` with anything shaped like a token, and every secret held, replaced."""
    text = _TOKEN_PATTERN.sub("svc_***", text)
    for secret in sorted(_held, key=len, reverse=True):  # a longer one first: it may hold a shorter one
        if secret in text:
            text = text.replace(secret, "***")
    return text
