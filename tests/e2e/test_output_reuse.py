"""Real MkDocs builds (the plain `mkdocs` theme, the reference service on a loopback port):
what a build with nothing changed takes from the cache instead of computing it (the sanitised
HTML and head tags of `outputs.pack`, the pages' records), and when it must not."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import update

from mkdocs_blogsvc import sanitize, session
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.removals import Cleaned
from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article
from tests.e2e.sites import Service
from tests.e2e.test_build import json_ld, parse, post_page, run_build, site

HOSTILE = "# Hostile\n\nHello <b>there</b><script>alert(1)</script>"


@pytest.fixture
def sanitised(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The HTML the real sanitiser is given, one item per call (the cache's misses)."""
    calls: list[str] = []
    real = sanitize.clean_html

    def counting(html: str) -> Cleaned:
        calls.append(html)
        return real(html)

    monkeypatch.setattr(sanitize, "clean_html", counting)
    return calls


def pages(site_dir: Path, *slugs: str) -> dict[str, str]:
    return {slug: post_page(site_dir, slug).read_text(encoding="utf-8") for slug in slugs}


def test_an_unchanged_article_reuses_its_sanitised_html_and_a_changed_one_does_not(
    tmp_path: Path, service: Service, db: Database, owner: Owner, sanitised: list[str]
) -> None:
    hostile = add_article(db, owner.blog_id, "Hostile", content=HOSTILE)
    add_article(db, owner.blog_id, "Plain", minutes_ago=3)
    config = site(tmp_path, service, db, owner, material=False)
    run_build(config)
    assert len(sanitised) == 2  # a cold cache: every article page sanitised
    first = pages(tmp_path / "site", "hostile", "plain")
    assert "<script>alert(1)</script>" not in first["hostile"] and "<b>there</b>" in first["hostile"]

    sanitised.clear()
    run_build(config)
    assert sanitised == []  # nothing changed: both pages' HTML from the cache
    assert pages(tmp_path / "site", "hostile", "plain") == first  # the same pages, head tags included

    with db.session(write=True) as db_session:
        db_session.execute(
            update(tables.Article)
            .where(tables.Article.id == hostile)
            .values(content=HOSTILE + "\n\nA new <i>paragraph</i><script>alert(2)</script>.", updated_at=db.now())
        )
    run_build(config)
    assert len(sanitised) == 1 and "A new" in sanitised[0]  # only the changed article
    again = pages(tmp_path / "site", "hostile", "plain")
    assert "<i>paragraph</i>" in again["hostile"] and "alert(2)" not in again["hostile"]
    assert again["plain"] == first["plain"]


def test_a_changed_setting_recomputes_what_it_affects(
    tmp_path: Path, service: Service, db: Database, owner: Owner, sanitised: list[str]
) -> None:
    """A Markdown extension changes the HTML the sanitiser is given (its key); a head template
    changes every head (its fingerprint): neither is taken from the cache."""
    add_article(db, owner.blog_id, "Hostile", content=HOSTILE)
    config = site(tmp_path, service, db, owner, material=False)
    run_build(config)
    sanitised.clear()
    text = config.read_text(encoding="utf-8")
    config.write_text(text + "markdown_extensions:\n  - toc:\n      permalink: true\n", encoding="utf-8")
    run_build(config)
    assert len(sanitised) == 1 and "headerlink" in sanitised[0]
    assert "headerlink" in post_page(tmp_path / "site", "hostile").read_text(encoding="utf-8")

    template = tmp_path / "head.html.j2"
    template.write_text('<meta name="blogsvc-test" content="{{ title }}">\n', encoding="utf-8")
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "plugins:\n- blogsvc:\n", "plugins:\n- blogsvc:\n    head_template: head.html.j2\n"
        ),
        encoding="utf-8",
    )
    sanitised.clear()
    run_build(config)
    page = post_page(tmp_path / "site", "hostile").read_text(encoding="utf-8")
    assert '<meta name="blogsvc-test" content="Hostile">' in page and not json_ld(
        parse(post_page(tmp_path / "site", "hostile"))
    )
    assert sanitised == []  # the head template does not change the sanitised HTML


@pytest.mark.parametrize("damage", ["garbage", "truncated", "removed"])
def test_a_damaged_outputs_pack_is_ignored_and_rebuilt(
    tmp_path: Path, service: Service, db: Database, owner: Owner, sanitised: list[str], damage: str
) -> None:
    add_article(db, owner.blog_id, "Hostile", content=HOSTILE)
    add_article(db, owner.blog_id, "Plain", minutes_ago=3)
    config = site(tmp_path, service, db, owner, material=False)
    run_build(config)
    first = pages(tmp_path / "site", "hostile", "plain")
    pack = Cache(tmp_path / ".cache" / "blogsvc").outputs_path
    size = pack.stat().st_size
    if damage == "garbage":
        pack.write_bytes(b"\x00\xff{not json\n" * (size // 12 + 1))
    elif damage == "truncated":
        pack.write_bytes(pack.read_bytes()[: size // 2])
    else:
        pack.unlink()
    sanitised.clear()
    run_build(config)  # no traceback: the outputs are computed again
    assert len(sanitised) == 2
    assert pages(tmp_path / "site", "hostile", "plain") == first
    sanitised.clear()
    run_build(config)  # and kept again
    assert sanitised == []


@pytest.mark.parametrize("directory_urls", [True, False])
@pytest.mark.parametrize("src_uri", ["blog/posts/a-post.md", "blog/images/x.png", "blog//posts/./b.md", "index.md"])
def test_the_plugins_files_are_the_ones_mkdocs_would_make(tmp_path: Path, src_uri: str, directory_urls: bool) -> None:
    """`session.generated_files` skips MkDocs' pathlib round trip for plain paths: the files
    it makes have the attributes `File.generated` gives, and the same URLs."""
    from mkdocs.config import load_config
    from mkdocs.structure.files import File

    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(f"site_name: t\nuse_directory_urls: {str(directory_urls).lower()}\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))
    config.plugins._current_plugin = "blogsvc"
    made = session.generated_files(config)(src_uri, "/cache/file")
    expected = File.generated(config, src_uri, abs_src_path="/cache/file")
    assert vars(made) == vars(expected)
    assert (made.dest_uri, made.url, made.abs_dest_path) == (expected.dest_uri, expected.url, expected.abs_dest_path)
    assert made.generated_by == "blogsvc" and made.edit_uri is None
