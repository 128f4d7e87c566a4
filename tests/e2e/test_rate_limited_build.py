"""A build against a service that answers 429: it waits what Retry-After says, within its
deadline, and finishes. SQLite only: what is tested is the client's waiting, not the counters'
SQL (tests/server/test_rate_limits.py runs those on both engines)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.ratelimit import Limit
from tests.conftest import Owner, add_article
from tests.e2e.sites import Service
from tests.e2e.test_build import post_page, run_build, site


@pytest.mark.slow
def test_a_build_finishes_against_a_rate_limited_service(tmp_path: Path, db: Database, owner: Owner) -> None:
    add_article(db, owner.blog_id, "Limited post", minutes_ago=5)
    service = Service(db, rate_limits={"token": Limit(1, 10)})
    try:
        config = site(tmp_path, service, db, owner)
        token = (tmp_path / "credentials.json").read_text().split('"access_token": "', 1)[1].split('"', 1)[0]
        # Spend the window's one request early in a window: the build's first call gets 429
        # (Retry-After at least 5 s away, whatever the machine's load) and waits within its deadline.
        with httpx.Client(base_url=service.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            while True:
                answer = http.get("/api/v1/status")
                if answer.status_code == 429 and int(answer.headers["Retry-After"]) >= 5:
                    break
                time.sleep(0.5)
        run_build(config)
    finally:
        service.stop()
    assert service.requests.count("/api/v1/sync") >= 2  # refused, waited, retried
    assert "Limited post" in post_page(tmp_path / "site", "limited-post").read_text()
