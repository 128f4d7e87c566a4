"""The check that the articles land where one of Material's blog plugins reads posts (review
findings: a second blog, and a blog at the site's root, were warned about wrongly)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from mkdocs_blogsvc.material import check_post_dir


def blog(blog_dir: str, post_dir: str = "{blog}/posts") -> SimpleNamespace:
    return SimpleNamespace(config=SimpleNamespace(blog_dir=blog_dir, post_dir=post_dir))


@pytest.mark.parametrize(
    ("blogs", "posts_dir"),
    [
        ([blog("blog"), blog("notas")], "notas/posts"),  # the second of two blogs
        ([blog("blog"), blog("notas")], "blog/posts"),
        ([blog(".")], "posts"),  # a blog at the site's root reads ./posts
        ([blog("blog")], "blog/posts/sub"),
    ],
)
def test_posts_read_by_one_of_the_blogs_give_no_warning(
    blogs: list[SimpleNamespace],
    posts_dir: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    check_post_dir(blogs, posts_dir)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_posts_no_blog_reads_are_warned_about_naming_every_blog(caplog: pytest.LogCaptureFixture) -> None:
    check_post_dir([blog("blog"), blog("notas")], "news/posts")
    (record,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (
        "posts_dir is 'news/posts' but Material's blog plugin reads posts from 'blog/posts' or 'notas/posts'"
        in record.getMessage()
    )
