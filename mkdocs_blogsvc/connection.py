"""One connection to the service: the API client and the token manager that feeds it its
access tokens, built together by `connect`.

Why one object: the two need each other (data calls take tokens from the manager; a refresh is
a call of the client), so they are wired in one place, and callers get both, typed, without
reaching into the client for its token source.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from mkdocs_blogsvc.api import BlogServiceClient
from mkdocs_blogsvc.config import Settings
from mkdocs_blogsvc.credentials import TokenManager


class Connection:
    """`client` for the service's endpoints, `tokens` for the stored credentials (status,
    forced refresh, hand-over). Close it (or use it as a context manager) when done."""

    def __init__(self, client: BlogServiceClient, tokens: TokenManager) -> None:
        self.client = client
        self.tokens = tokens

    def __repr__(self) -> str:
        return f"Connection({self.client.base_url!r})"

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def connect(
    settings: Settings,
    *,
    transport: Any = None,
    clock: Callable[[], float] = time.time,
    environ: Mapping[str, str] = os.environ,
) -> Connection:
    """A connection for `settings` whose data calls take tokens from the credential store
    (`transport` for tests: an `httpx` transport)."""
    client = BlogServiceClient(settings.base_url, transport=transport, timeout=settings.timeout)
    tokens = TokenManager(settings, client, clock=clock, environ=environ)
    client.tokens = tokens
    return Connection(client, tokens)
