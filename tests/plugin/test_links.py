"""Links to the service's articles rewritten to the site's pages (`links.rewrite`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mkdocs_blogsvc.links import HostedBlog, Reference, Targets, rewrite
from mkdocs_blogsvc.models import Article
from mkdocs_blogsvc.render import md_text

BASE = "https://svc.example.com"
BLOG = HostedBlog(BASE, "alice-blog")
T0 = datetime(2025, 3, 4, 12, 0, tzinfo=timezone.utc)


def article(article_id: str, slug: str, title: str = "Other post", minutes: int = 0) -> Article:
    return Article(
        id=article_id,
        slug=slug,
        title=title,
        description=None,
        content="",
        cover_image_url=None,
        inline_image_urls=(),
        tags=(),
        seo_keywords=(),
        seo_score=None,
        schema_org_json=None,
        published_at=T0 + timedelta(minutes=minutes),
        updated_at=T0,
        view_count=0,
        content_hash="0" * 64,
    )


TARGETS = Targets(
    [
        (article("c1", "other-post"), "blog/posts/other-post.md"),
        (article("c2", "first", "A [weird] *title*"), "blog/posts/first.md"),
    ]
)


def run(text: str, targets: Targets = TARGETS, blog: HostedBlog = BLOG) -> tuple[str, list[str], int]:
    done = rewrite(text, here="blog/posts/this.md", blog=blog, targets=targets, link_text=lambda a: md_text(a.title))
    return done.text, done.unresolved, done.count


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"{BASE}/blogs/alice-blog/other-post", Reference("other-post", "", False)),
        (f"{BASE}/blogs/alice-blog/other-post/", Reference("other-post", "", False)),
        (f"{BASE}/blogs/alice-blog/other-post?utm=x#part-2", Reference("other-post", "#part-2", False)),
        ("HTTPS://SVC.example.COM/blogs/alice-blog/other-post", Reference("other-post", "", False)),
        ("/blogs/alice-blog/other-post", Reference("other-post", "", False)),
        (f"{BASE}/api/v1/articles/c1", Reference("c1", "", True)),
        (f"{BASE}/api/v1/articles/other-post", Reference("other-post", "", True)),
        (f"{BASE}/blogs/bob-blog/other-post", None),  # another blog of the service
        ("http://svc.example.com/blogs/alice-blog/other-post", None),  # another scheme: another origin
        ("https://elsewhere.example/blogs/alice-blog/other-post", None),
        (f"{BASE}/blogs/alice-blog/", None),  # the blog's index
        (f"{BASE}/blogs/alice-blog/a/b", None),
        ("/api/v1/articles/c1", None),  # the API needs a token: only the absolute form is a link someone wrote
        ("other-post.md", None),
        ("mailto:someone@example.com", None),
    ],
)
def test_recognised_forms(url: str, expected: Reference | None) -> None:
    assert BLOG.reference(url) == expected


def test_base_url_with_a_path_prefix() -> None:
    blog = HostedBlog("https://example.com/svc", "alice-blog")
    assert blog.reference("https://example.com/svc/blogs/alice-blog/x") == Reference("x", "", False)
    assert blog.reference("/svc/blogs/alice-blog/x") == Reference("x", "", False)
    assert blog.reference("https://example.com/blogs/alice-blog/x") is None


def test_unknown_blog_slug_recognises_only_the_api_form() -> None:
    blog = HostedBlog(BASE, None)
    assert blog.reference(f"{BASE}/blogs/alice-blog/other-post") is None
    assert blog.reference(f"{BASE}/api/v1/articles/c1") == Reference("c1", "", True)


def test_inline_reference_and_autolinks_are_rewritten() -> None:
    text = (
        f'See [the other post]({BASE}/blogs/alice-blog/other-post#part-2 "Title") and '
        f"[by id](<{BASE}/api/v1/articles/c2>).\n\n"
        f"Also <{BASE}/blogs/alice-blog/other-post> and [ref][r].\n\n"
        f'[r]: {BASE}/blogs/alice-blog/first/  "Ref title"\n'
    )
    done, unresolved, count = run(text)
    assert done == (
        'See [the other post](other-post.md#part-2 "Title") and [by id](<first.md>).\n\n'
        "Also [Other post](other-post.md) and [ref][r].\n\n"
        '[r]: first.md  "Ref title"\n'
    )
    assert (unresolved, count) == ([], 4)


def test_autolink_text_is_the_escaped_title() -> None:
    done, _, _ = run(f"<{BASE}/api/v1/articles/c2>")
    assert done == r"[A \[weird\] \*title\*](first.md)"


def test_links_from_another_folder_are_relative() -> None:
    done = rewrite(
        f"[x]({BASE}/blogs/alice-blog/other-post)",
        here="blog/index.md",
        blog=BLOG,
        targets=TARGETS,
        link_text=lambda a: a.title,
    )
    assert done.text == "[x](posts/other-post.md)"


def test_unknown_articles_are_left_and_reported() -> None:
    text = f"[draft]({BASE}/blogs/alice-blog/secret-draft) and [other blog]({BASE}/blogs/bob-blog/x)"
    done, unresolved, count = run(text)
    assert done == text
    assert unresolved == [f"{BASE}/blogs/alice-blog/secret-draft"]
    assert count == 0


def test_code_is_never_rewritten() -> None:
    link = f"[x]({BASE}/blogs/alice-blog/other-post)"
    text = f"```markdown\n{link}\n```\n\n~~~~\n{link}\n~~~~\n\nInline `{link}` code.\n\n    {link}\n\nReal {link}\n"
    done, unresolved, count = run(text)
    assert count == 1
    assert done == text.replace(f"Real {link}", "Real [x](other-post.md)")
    assert unresolved == []


def test_raw_html_and_bare_urls_are_left_alone() -> None:
    text = f'<a href="{BASE}/blogs/alice-blog/other-post">x</a> and {BASE}/blogs/alice-blog/other-post'
    assert run(text)[0] == text


def test_shared_slug_names_the_older_article() -> None:
    older, newer = article("old", "same", minutes=0), article("new", "same", minutes=5)
    targets = Targets([(newer, "blog/posts/same-2.md"), (older, "blog/posts/same.md")])
    done, _, _ = run(f"[a]({BASE}/blogs/alice-blog/same) [b]({BASE}/api/v1/articles/new)", targets)
    assert done == "[a](same.md) [b](same-2.md)"


def test_a_hosted_page_link_names_a_slug_never_an_id() -> None:
    """`/blogs/<blog>/<x>` is the page of the article whose slug is x, even when x is also the
    id of another article; only the API form is looked up by id first."""
    targets = Targets([(article("c1", "first"), "blog/posts/first.md"), (article("c2", "c1"), "blog/posts/c1.md")])
    done, _, _ = run(f"[a]({BASE}/blogs/alice-blog/c1) [b]({BASE}/api/v1/articles/c1)", targets)
    assert done == "[a](c1.md) [b](first.md)"


def test_a_page_path_with_spaces_is_written_as_a_url() -> None:
    targets = Targets([(article("c1", "other-post"), "blog/my posts/other-post.md")])
    done = rewrite(
        f"[x]({BASE}/blogs/alice-blog/other-post)",
        here="blog/index.md",
        blog=BLOG,
        targets=targets,
        link_text=lambda a: a.title,
    )
    assert done.text == "[x](my%20posts/other-post.md)"
