"""Article images in real MkDocs builds (Material, its blog plugin, mkdocs-rss-plugin): intrinsic
sizes and lazy loading by default, Open Graph and JSON-LD sizes, the feed's enclosure length,
and with `optimize_images` the WebP variants, kept in the cache and swept with their article;
image bombs and corrupt images refused without decoding them."""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config

from mkdocs_blogsvc.server import media
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.sites import Service, snapshot, write_credentials, write_site
from tests.e2e.test_build import json_ld, meta_property, parse, post_page
from tests.imagesamples import photo_like, png_bomb, truncated


@functools.cache
def photo() -> bytes:
    """A 1600x900 photo-like PNG, drawn once per process when a test first needs it (not when
    the module is collected: every worker collects every module)."""
    return photo_like(1600, 900)


@functools.cache
def small() -> bytes:
    """A 320x200 photo-like PNG, drawn once per process when a test first needs it."""
    return photo_like(320, 200, seed=3)


def store(db: Database, owner: Owner, data: bytes) -> str:
    with db.session(write=True) as session:
        return media.store_image(session, owner.blog_id, data)


def pictured(db: Database, owner: Owner, title: str, cover: bytes, inline: bytes | None = None, **fields: Any) -> str:
    """An article with a cover and, optionally, an inline image after its first paragraph."""
    key = store(db, owner, cover)
    content = f"# {title}\n\nFirst paragraph."
    keys = []
    if inline is not None:
        keys.append(store(db, owner, inline))
        content += f"\n\n![An inline picture](blogsvc-media:{keys[0]})\n\nLast paragraph."
    return add_article(db, owner.blog_id, title, cover_media_key=key, content=content, inline_media_keys=keys, **fields)


def make_site(tmp_path: Path, service: Service, db: Database, owner: Owner, **plugin: Any) -> Path:
    config = write_site(tmp_path, service.url, plugin=plugin)
    data = yaml.safe_load(config.read_text())
    data["plugins"].append(
        {
            "rss": {
                "match_path": "blog/posts/.*",
                "use_git": False,
                "date_from_meta": {"as_creation": "date.created", "as_update": "date.updated"},
            }
        }
    )
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    return config


def run_build(config: Path) -> None:
    loaded = load_config(str(config), strict=False)
    loaded.plugins.on_startup(command="build", dirty=False)  # where mkdocs-rss-plugin sets itself up
    build(loaded)


def img_tags(html: str) -> list[dict[str, str]]:
    return [dict(re.findall(r'([a-z-]+)="([^"]*)"', tag)) for tag in re.findall(r"<img\b[^>]*>", html)]


def test_by_default_images_have_their_size_the_cover_is_eager_the_rest_lazy(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    pictured(db, owner, "Pictured", photo(), small(), description="A lead.")
    pictured(db, owner, "Older", small(), minutes_ago=60)
    config = make_site(tmp_path, service, db, owner)
    run_build(config)
    page = post_page(tmp_path / "site", "pictured")
    html = page.read_text(encoding="utf-8")
    cover, inline = [tag for tag in img_tags(html) if "images/" in tag.get("src", "")]
    assert (cover["width"], cover["height"]) == ("1600", "900") and "loading" not in cover
    assert (inline["width"], inline["height"], inline["loading"], inline["decoding"]) == ("320", "200", "lazy", "async")
    # kept through the sanitiser: a theme capping the width without `height: auto` keeps the aspect ratio
    assert cover["style"] == inline["style"] == "height:auto"
    assert "<picture" not in html  # no variants by default
    parsed = parse(page)
    assert meta_property(parsed, "og:image:width") == ["1600"] and meta_property(parsed, "og:image:height") == ["900"]
    assert meta_property(parsed, "og:image:alt") == ["Pictured"]
    (posting,) = json_ld(parsed)
    assert posting["image"]["@type"] == "ImageObject" and (posting["image"]["width"], posting["image"]["height"]) == (
        1600,
        900,
    )
    # Material's blog index shows the excerpt: the cover has its size there too
    index = (tmp_path / "site" / "blog" / "index.html").read_text(encoding="utf-8")
    excerpt_cover, older_cover = [tag for tag in img_tags(index) if "images/" in tag.get("src", "")]
    assert (excerpt_cover["width"], excerpt_cover["height"]) == ("1600", "900")
    # found by review: each excerpt is a Markdown run of its own, so every excerpt's cover was eager
    assert "loading" not in excerpt_cover and (older_cover["loading"], older_cover["decoding"]) == ("lazy", "async")
    # the feed's enclosure has the cover's real byte length (mkdocs-rss-plugin said "None")
    feed = (tmp_path / "site" / "feed_rss_created.xml").read_text(encoding="utf-8")
    assert f'length="{len(photo())}"' in feed, re.findall(r"<enclosure[^>]*>", feed)


def test_optimize_images_offers_webp_widths_kept_in_the_cache_and_swept_with_the_article(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    kept = pictured(db, owner, "Photo", photo(), small(), description="A lead.", minutes_ago=5)
    gone = pictured(db, owner, "Gone", photo_like(1200, 800, seed=11), minutes_ago=3)
    config = make_site(tmp_path, service, db, owner, optimize_images=True)
    run_build(config)
    site, cache = tmp_path / "site", tmp_path / ".cache" / "blogsvc"
    html = post_page(site, "photo").read_text(encoding="utf-8")
    (picture,) = re.findall(r"<picture>.*?</picture>", html, re.DOTALL)
    srcset = re.search(r'<source sizes="([^"]+)" srcset="([^"]+)" type="image/webp"', picture) or re.search(
        r'<source[^>]*srcset="([^"]+)"', picture
    )
    assert srcset is not None, picture
    candidates = dict(reversed(item.strip().rsplit(" ", 1)) for item in srcset.group(srcset.lastindex or 1).split(","))
    assert set(candidates) == {"480w", "960w", "1440w"}
    largest = post_page(site, "photo").parent / candidates["1440w"]
    assert largest.resolve().read_bytes()[8:12] == b"WEBP"
    assert largest.stat().st_size <= len(photo()) / 2
    (cover,) = [tag for tag in img_tags(picture)]
    assert (cover["width"], cover["height"]) == ("1600", "900") and cover["src"].endswith(".png")
    assert html.count("<picture>") == 1  # the 320 px inline image has no variants
    variants = sorted(p.name for p in (cache / "variants").iterdir())
    assert len(variants) == 6  # 3 widths of the 1600 px cover; 480, 960 and its own 1200 of the other

    # a build with nothing changed makes no variant and rewrites no file of the cache
    before = snapshot(cache / "variants"), (cache / "images.json").stat().st_mtime_ns
    run_build(config)
    assert (snapshot(cache / "variants"), (cache / "images.json").stat().st_mtime_ns) == before

    # the article deleted on the service: its variants go with it
    with db.session(write=True) as session:
        from mkdocs_blogsvc.server import tables

        session.get(tables.Article, gone).status = "draft"
    run_build(config)
    assert len(list((cache / "variants").iterdir())) == 3
    assert kept


@pytest.mark.parametrize("hostile", ["bomb", "truncated"])
def test_hostile_images_are_refused_or_keep_their_original_with_one_warning(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    hostile: str,
) -> None:
    """An image bomb is not downloaded (found by review: it was served from the site, its huge
    size in the <img>, to every reader's browser): the page keeps the remote URL, and the next
    sync tries again, as for any image that failed. A truncated image keeps its original, its
    variants refused once."""
    data = png_bomb() if hostile == "bomb" else truncated(photo_like(1600, 900, seed=5))
    article = pictured(db, owner, "Hostile", data)
    config = make_site(tmp_path, service, db, owner, optimize_images=True)
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.blogsvc"):
        run_build(config)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and article in warnings[0], warnings
    expected = (
        "was not downloaded (its header claims more than 50000000 pixels)"
        if hostile == "bomb"
        else "keeps its original"
    )
    assert expected in warnings[0]
    html = post_page(tmp_path / "site", "hostile").read_text(encoding="utf-8")
    assert "<picture" not in html
    cache = tmp_path / ".cache" / "blogsvc"
    assert not list(cache.glob("variants/*.webp"))
    assert bool(list(cache.glob("images/*.png"))) == (hostile == "truncated")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.blogsvc"):
        run_build(config)  # refused once: not decoded again, not warned about again
    assert not [r for r in caplog.records if "keeps its original" in r.getMessage()]


def test_export_writes_the_sizes_as_attr_list_and_zensical_builds_them(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """Zensical runs no plugin: the exported page itself carries each image's size (attr_list,
    when the site enables it), the cover eager, the inline image lazy."""
    from click.testing import CliRunner

    from mkdocs_blogsvc.cli import main
    from tests.e2e.sites import CLIENT_ID
    from tests.e2e.test_zensical import zensical_build

    pictured(db, owner, "Pictured", photo(), small(), description="A lead.")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        "site_name: Exported\nsite_url: https://example.test/\nmarkdown_extensions: [attr_list]\nplugins:\n"
        f"  - blogsvc:\n      enabled: false\n      base_url: {service.url}\n      client_id: {CLIENT_ID}\n"
        "      credentials_file: credentials.json\n      optimize_images: true\n",
        encoding="utf-8",
    )
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    result = CliRunner().invoke(main, ["export", str(tmp_path / "docs"), "-f", str(config)])
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "docs" / "blog" / "posts" / "pictured.md").read_text(encoding="utf-8")
    assert '.png){ width="1600" height="900" }' in markdown
    assert '.png){ width="320" height="200" loading="lazy" decoding="async" }' in markdown
    assert not list((tmp_path / "docs").rglob("*.webp"))  # exported pages offer the originals only
    zensical_build(tmp_path)
    html = next((tmp_path / "site").rglob("pictured/index.html")).read_text(encoding="utf-8")
    cover, inline = [tag for tag in img_tags(html) if "images/" in tag.get("src", "")]
    assert (cover["width"], cover["height"]) == ("1600", "900") and "loading" not in cover
    assert (inline["width"], inline["loading"], inline["decoding"]) == ("320", "lazy", "async")
