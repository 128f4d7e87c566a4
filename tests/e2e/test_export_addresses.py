"""Where export says an article page is (`redirects.PostUrls`, computed from mkdocs.yml) is where
MkDocs with Material's blog plugin and Zensical's own blog really build it, for the URL formats
a site may choose; and the pieces of the export's redirects and head that need no service."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mkdocs_blogsvc.config import load_site
from mkdocs_blogsvc.export import _builds_at
from mkdocs_blogsvc.manifest import Address
from mkdocs_blogsvc.redirects import PostUrls, _format_date, post_urls
from mkdocs_blogsvc.theme_override import HEAD_PARTIAL, override_in_use, write_theme_override
from tests.e2e.test_build import run_build

#: Just before midnight UTC: a date taken in another time zone would name another day.
CREATED = datetime(2026, 1, 31, 23, 30, 5, tzinfo=timezone.utc)

CASES = {
    "default": ("  - blog\n", True),
    "slug": ('  - blog:\n      post_url_format: "{slug}"\n', True),
    "month-files": (
        (
            "  - blog:\n      blog_dir: news\n      post_url_date_format: yyyy/MM\n"
            '      post_url_format: "{date}/{file}"\n'
        ),
        False,
    ),
    "no-blog": ("  - search\n", True),
    "categories": ('  - blog:\n      post_url_format: "{categories}/{slug}"\n', True),  # none: empty
}


def write_site(root: Path, plugins: str, directory_urls: bool) -> Path:
    posts = root / "docs" / ("news" if "news" in plugins else "blog") / "posts"
    posts.mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Home\n")
    (posts.parent / "index.md").write_text("# Blog\n")
    (posts / "the-slug.md").write_text(
        "---\ntitle: A post\ndate:\n  created: 2026-01-31 23:30:05+00:00\nslug: the-slug\n---\n\n# A post\n\nText.\n"
    )
    config = root / "mkdocs.yml"
    config.write_text(
        "site_name: S\nsite_url: https://example.test/s/\ntheme:\n  name: material\n"
        f"use_directory_urls: {str(directory_urls).lower()}\n"
        "plugins:\n  - blogsvc:\n      enabled: false\n"
        f"      blog_dir: {'news' if 'news' in plugins else 'blog'}\n" + plugins,
        encoding="utf-8",
    )
    return config


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_computed_address_is_where_mkdocs_and_zensical_build_the_post(tmp_path: Path, case: str) -> None:
    plugins, directory_urls = CASES[case]
    config = write_site(tmp_path, plugins, directory_urls)
    site = load_site(str(config))
    (settings,) = site.instances
    urls = post_urls(site.blogs, settings.posts_dir, use_directory_urls=site.use_directory_urls, language=site.language)
    address = urls.address(f"{settings.posts_dir}/the-slug.md", "the-slug", CREATED)
    assert address is not None

    run_build(config)
    assert (tmp_path / "site" / address.path).is_file(), sorted(
        p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")
    )
    result = subprocess.run(
        [sys.executable, "-m", "zensical", "build"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    built = (tmp_path / "site" / address.path).read_text(encoding="utf-8")
    assert f'<link rel="canonical" href="https://example.test/s/{address.url}">' in built


def test_post_urls_follow_mkdocs_naming() -> None:
    assert PostUrls("blog").address("blog/posts/x.md", "s", CREATED) == Address(
        "blog/2026/01/31/s/", "blog/2026/01/31/s/index.html"
    )
    assert PostUrls("blog", "{categories}/{slug}", use_directory_urls=False).address(
        "blog/posts/x.md", "s", CREATED
    ) == Address("blog/s.html", "blog/s.html")
    assert PostUrls(None).address("blog/posts/index.md", "index", CREATED) == Address(
        "blog/posts/", "blog/posts/index.html"
    )
    assert PostUrls("blog", "{unknown}").address("blog/posts/x.md", "s", CREATED) is None


def test_dates_without_babel_take_the_numeric_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "babel.dates", None)  # as if babel were not installed
    assert _format_date(CREATED, "yyyy/MM/dd", "en") == "2026/01/31"
    assert _format_date(CREATED, "yy-M-d 'at' y", "en") == "26-1-31 at 2026"
    assert _format_date(CREATED, "MMMM", "en") is None and _format_date(CREATED, "long", "en") is None


def test_a_page_of_the_site_wins_over_an_old_address(tmp_path: Path) -> None:
    (tmp_path / "blog" / "b").mkdir(parents=True)
    (tmp_path / "blog" / "a.md").write_text("# A\n")
    (tmp_path / "blog" / "b" / "README.md").write_text("# B\n")
    assert _builds_at(tmp_path, "blog/a/index.html") and _builds_at(tmp_path, "blog/b/index.html")
    assert _builds_at(tmp_path, "blog/a.html") and not _builds_at(tmp_path, "blog/c/index.html")


def test_the_override_counts_as_used_only_when_current_and_included(tmp_path: Path) -> None:
    assert not override_in_use(None) and not override_in_use(tmp_path / "missing")
    write_theme_override(tmp_path)
    assert override_in_use(tmp_path)
    (tmp_path / "main.html").write_text('{% extends "base.html" %}\n')  # the user's, without the include
    assert not override_in_use(tmp_path)
    (tmp_path / "partials").mkdir()
    (tmp_path / "partials" / "extra.html").write_text(f'{{% include "{HEAD_PARTIAL}" %}}\n')
    assert override_in_use(tmp_path)
    (tmp_path / HEAD_PARTIAL).write_text("an older partial, without the JSON-LD\n")
    assert not override_in_use(tmp_path)
