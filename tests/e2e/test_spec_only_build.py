"""Real MkDocs builds against a service written from the spec alone (`tests.speclike`): no gzip
request bodies, no headers beyond the spec's. Every build must sync, whatever the blog's size
(a body above 64 KiB once went gzipped and every build after the first failed)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config

from mkdocs_blogsvc.config import ENV_REFRESH_TOKEN
from tests.e2e.sites import write_site
from tests.speclike import CLIENT_ID, SpecArticle, SpecService, make_articles


def build_site(config_file: Path) -> None:
    build(load_config(str(config_file)))


def sync_codings(service: SpecService) -> list[str | None]:
    return [encoding for _method, path, encoding in service.requests if path == "/api/v1/sync"]


def check_every_build_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, count: int, *, material: bool
) -> None:
    """A first build, a change on the service, a second build that shows it, a third with no change."""
    caplog.set_level(logging.INFO)
    monkeypatch.delenv("CI", raising=False)
    with SpecService(make_articles(count)) as service:
        monkeypatch.setenv(ENV_REFRESH_TOKEN, service.refresh_token)  # seeds the store at the first build
        config = write_site(tmp_path, service.url, material=material, plugin={"client_id": CLIENT_ID})
        if not material:  # the plain theme lists every page in every page's nav: n² for a large blog
            config.write_text(config.read_text() + yaml.safe_dump({"nav": ["index.md"]}))
        build_site(config)
        assert (tmp_path / "credentials.json").is_file()
        assert len(list((tmp_path / "site").rglob("article-1*"))) >= 1

        edited = service.articles["c000000000000000000000007"]
        edited.content = "An edit made on the service after the first build.\n"
        service.articles.pop("c000000000000000000000009")
        added = SpecArticle(
            id="cnew000000000000000000000",
            slug="brand-new",
            title="Brand new",
            content="Published after the first build.\n",
            published_at=edited.published_at,
        )
        service.articles[added.id] = added
        build_site(config)
        built = {p.relative_to(tmp_path / "site").as_posix(): p for p in (tmp_path / "site").rglob("*.html")}
        assert any("brand-new" in name for name in built), "the new article did not reach the site"
        assert not any("/article-9/" in f"/{name}" for name in built), "the deleted article is still on the site"
        page = next(p for name, p in built.items() if "/article-7/" in f"/{name}")
        assert "An edit made on the service" in page.read_text(encoding="utf-8")

        build_site(config)
    assert "failed" not in caplog.text and "Traceback" not in caplog.text
    assert sync_codings(service) == [None, None, None]  # plain JSON each time, as the spec shows it
    assert service.last_sync_at is not None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_1000_article_material_blog_syncs_on_every_build_against_a_spec_literal_service(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    check_every_build_syncs(tmp_path, monkeypatch, caplog, 1000, material=True)
