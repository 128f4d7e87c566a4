"""No invisible character leaks into a page's meta tags.

Text a page shows gets a WORD JOINER (U+2060) after each `<` that could open a tag (a tooltip
takes what is shown as HTML: see `render.neutral`); a meta tag is never shown, so its content is
the article's text as written: in MkDocs builds with the plugin and in Zensical builds of an export."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mkdocs_blogsvc.demo import build_site
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.sites import Service, write_credentials
from tests.e2e.test_build import meta_property, parse
from tests.e2e.test_zensical import export, one_site, zensical_build

TITLE = "Why a <b> is not a <strong>"
TAG = "<html> & co"


def meta_contents(page: Path) -> list[str]:
    return [tag for tag in re.findall(r"<meta [^>]*>", page.read_text(encoding="utf-8"))]


@pytest.mark.slow
@pytest.mark.parametrize("generator", ["zensical", "mkdocs"])
def test_meta_tags_hold_the_title_as_written_and_no_word_joiner(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    generator: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    add_article(db, owner.blog_id, TITLE, slug="angle", description="About <b> and <i>", tags=[TAG])
    config = one_site(tmp_path, service.url)
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    if generator == "zensical":
        export(config, "--theme-dir", str(tmp_path / "overrides"))
        zensical_build(tmp_path)
    else:
        monkeypatch.setenv("BLOGSVC_PLUGIN", "true")
        build_site(config)
    page = tmp_path / "site" / "blog" / "angle" / "index.html"
    metas = meta_contents(page)
    assert metas and not [tag for tag in metas if "\u2060" in tag], metas
    assert meta_property(parse(page), "og:title") == [TITLE]
    assert meta_property(parse(page), "article:tag") == [TAG]
