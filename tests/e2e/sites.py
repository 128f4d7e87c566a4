"""Helpers shared by the plugin's tests: credentials for a minted token, settings, test sites."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from werkzeug.serving import WSGIRequestHandler, make_server

from mkdocs_blogsvc.config import Settings
from mkdocs_blogsvc.credentials import CredentialStore, StoredCredentials
from mkdocs_blogsvc.server import create_app
from mkdocs_blogsvc.server.database import Database

CLIENT_ID = "test-client"


def write_credentials(path: Path, base_url: str, access_token: str, valid_for: float = 3000) -> None:
    """A credential store holding a valid access token (minted with `issue_access_token`),
    recorded as valid for `valid_for` more seconds."""
    now = time.time()
    CredentialStore(path).save(
        StoredCredentials(
            base_url=base_url,
            client_id=CLIENT_ID,
            access_token=access_token,
            access_expires_at=now + valid_for,
            refresh_token="svc_rt_unused",
            refresh_expires_at=now + 20 * 86400,
            scope=("articles:read", "blog:read"),
        )
    )


def settings(root: Path, base_url: str, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "base_url": base_url,
        "client_id": CLIENT_ID,
        "client_secret": None,
        "scope": "articles:read blog:read",
        "redirect_port": 0,
        "credentials_file": root / "credentials.json",
        "blog_dir": "blog",
        "posts_dir": "blog/posts",
        "cache_dir": root / "cache",
    }
    values.update(changes)
    return Settings(**values)


def write_site(
    root: Path,
    base_url: str,
    *,
    material: bool = True,
    plugin: dict[str, Any] | None = None,
    site_url: str | None = "https://example.test/site/",
) -> Path:
    """A site folder with mkdocs.yml and docs/; returns the mkdocs.yml path."""
    docs = root / "docs"
    (docs / "blog" / "posts").mkdir(parents=True, exist_ok=True)
    (docs / "index.md").write_text("# Home\n")
    options = {"base_url": base_url, "client_id": CLIENT_ID, "credentials_file": "credentials.json", **(plugin or {})}
    config: dict[str, Any] = {"site_name": "Test site", "docs_dir": "docs", "site_dir": "site"}
    if site_url:
        config["site_url"] = site_url
    if material:
        (docs / "blog" / "index.md").write_text("# Blog\n")  # else Material's blog plugin writes it into docs_dir
        config["theme"] = {"name": "material"}
        config["plugins"] = [{"blogsvc": options}, {"blog": {"post_date_format": "short"}}, "tags"]
    else:
        config["theme"] = {"name": "mkdocs"}
        config["plugins"] = [{"blogsvc": options}]
    path = root / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `folder` with its mtime (ns) and content."""
    return {
        os.fspath(path.relative_to(folder)): (path.stat().st_mtime_ns, path.read_bytes())
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


class QuietRequestHandler(WSGIRequestHandler):
    """werkzeug's handler without its access log: a line per request, formatted and kept by
    pytest's log capture, was 4 % of the CPU of a test that downloads thousands of images.
    `Service.requests` records each request's path for the tests; errors are still logged."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Nothing: the access line is the only thing this logs."""


class Service:
    """The reference service on 127.0.0.1 in a thread, counting the requests per path;
    `wrap` puts a WSGI filter in front of it (a service that answers differently)."""

    def __init__(self, db: Database, *, wrap: Any = None, **app_options: Any) -> None:
        self.db = db
        self.requests: list[str] = []
        app = create_app(db, secret_key="test", **app_options)
        if wrap is not None:
            app = wrap(app)

        def counting(environ: dict[str, Any], start_response: Any) -> Any:
            self.requests.append(environ["PATH_INFO"])
            return app(environ, start_response)

        self.server = make_server("127.0.0.1", 0, counting, threaded=True, request_handler=QuietRequestHandler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service(db: Database) -> Iterator[Service]:
    running = Service(db)
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def fresh_plugin_instances() -> Iterator[None]:
    """MkDocs caches instances of plugins that define `on_startup` in its `plugins` option
    (that is how `mkdocs serve` keeps them across rebuilds): a test starts with none cached."""
    from mkdocs.config.defaults import MkDocsConfig

    MkDocsConfig.plugins.plugin_cache.clear()
    yield
    MkDocsConfig.plugins.plugin_cache.clear()
