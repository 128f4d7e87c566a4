"""Fuzz the service with schemathesis from its own `/openapi.json`, with a valid token.

Every operation gets positive and negative examples (bounded, derandomized: the same examples
on every run) and every answer goes through schemathesis' checks: no 5xx, a documented status,
the documented content type, headers and body schema, negative data rejected, valid data
accepted, requests without the token refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, settings

from mkdocs_blogsvc.server import create_app
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, add_article, add_owner, issue_access_token

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Target:
    app: Flask
    headers: dict[str, str]


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Target]:
    """A blog with published, draft and unpublished articles, and a token that reads it."""
    db = Database.from_path(tmp_path / "fuzz.db")
    owner = add_owner(db)
    for index in range(5):
        add_article(db, owner.blog_id, f"Post {index}", minutes_ago=index, tags=["a", "b"], cover_media_key="k.png")
    add_article(db, owner.blog_id, "Draft", status="draft")
    add_article(db, owner.blog_id, "Gone", status="unpublished")
    headers = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    yield Target(create_app(db, secret_key="fuzz", TESTING=True), headers)
    db.dispose()


#: The document as served (by an app on an in-memory database: serving it reads no data).
#: Loaded at import because schemathesis parametrizes at collection; `from_fixture` does not
#: work with pytest 9. Each test case is then sent to the `target` fixture's app.
schema = schemathesis.openapi.from_wsgi("/openapi.json", create_app(Database("sqlite://"), secret_key="doc"))


@schema.parametrize()
@settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_requests_get_documented_answers(case: schemathesis.Case[Any], target: Target) -> None:
    case.call_and_validate(app=target.app, headers=target.headers)


def test_schemathesis_cli_against_the_real_server(live_server: LiveServer) -> None:
    """`schemathesis run`, as a user would run it, against `server run` on a loopback port:
    every phase (coverage included), deterministic generation, a bounded number of examples."""
    db = Database.from_path(live_server.db_path)
    owner = add_owner(db)
    for index in range(3):
        add_article(db, owner.blog_id, f"Post {index}", minutes_ago=index)
    token = issue_access_token(db, owner)
    db.dispose()
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("schemathesis")),
            "run",
            f"{live_server.url}/openapi.json",
            "--header",
            f"Authorization: Bearer {token}",
            "--max-examples",
            "25",
            "--generation-deterministic",
            "--workers",
            "1",
            "--suppress-health-check",
            "all",
            "--output-truncate",
            "true",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "SCHEMATHESIS_HOOKS": "", "NO_COLOR": "1"},
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert token not in result.stdout
