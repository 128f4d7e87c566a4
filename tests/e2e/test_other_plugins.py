"""The plugin's pages with other common MkDocs plugins, in one strict Material build: what the
reference page "The pages" promises for each of them (mkdocs-macros, Material's privacy and
glightbox are checked with the sanitiser, in test_untrusted.py)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.sites import Service, write_credentials, write_site
from tests.e2e.test_build import json_ld, meta_property, parse, post_page, run_build


def test_minify_redirects_and_awesome_nav_work_with_article_pages(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    add_article(
        db,
        owner.blog_id,
        "First post",
        slug="first-post",
        content="# First post\n\nHello    *there*.\n\n```python\nx  =  1\n```\n",
    )
    config = write_site(tmp_path, service.url, material=True)
    data = yaml.safe_load(config.read_text())
    data["markdown_extensions"] = ["pymdownx.superfences"]
    data["plugins"] += [
        {"minify": {"minify_html": True, "minify_js": True}},
        {"redirects": {"redirect_maps": {"old/first.md": "blog/posts/first-post.md"}}},
        "awesome-nav",
    ]
    config.write_text(yaml.safe_dump(data))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    run_build(config, strict=True)  # awesome-nav, which builds the navigation, warns about no page
    site_dir = tmp_path / "site"
    page = post_page(site_dir, "first-post")
    text = page.read_text(encoding="utf-8")

    # minify: the page is minified, the head tags and the JSON-LD the plugin inserted survive it,
    # and code keeps its spaces.
    assert "\n    " not in text.split("<pre")[0]
    (posted,) = json_ld(parse(page))
    assert posted["headline"] == "First post"
    assert meta_property(parse(page), "og:title") == ["First post"]
    assert "x  =  1" in re.sub(r"<[^>]+>", "", text)

    # mkdocs-redirects: an old address of the site redirects to the article page.
    target = page.parent.relative_to(site_dir).as_posix() + "/"
    redirect = (site_dir / "old" / "first" / "index.html").read_text(encoding="utf-8")
    assert f'url=../../{target}"' in redirect
