"""`headtags`: where an article page's head tags go, on pages as themes really write them."""

from __future__ import annotations

from mkdocs_blogsvc.headtags import absolute, insert

HEAD = '<meta property="og:type" content="article">\n'


def test_the_tags_go_before_the_head_end_with_a_canonical_link_when_the_theme_wrote_none() -> None:
    page = "<html><head><title>T</title></head><body></body></html>"
    assert insert(page, HEAD, "https://x.test/a/?q=1&b=2") == (
        '<html><head><title>T</title><meta property="og:type" content="article">\n'
        '<link rel="canonical" href="https://x.test/a/?q=1&amp;b=2">\n</head><body></body></html>'
    )


def test_a_theme_s_canonical_link_is_kept_alone() -> None:
    page = '<head><LINK REL=canonical href="/a/"></head>'
    assert insert(page, HEAD, "https://x.test/a/") == f'<head><LINK REL=canonical href="/a/">{HEAD}</head>'


def test_a_canonical_link_is_found_in_any_spelling_and_only_in_the_head() -> None:
    theirs = '<head><link href="/a/" rel="Canonical"></head><body></body>'
    assert insert(theirs, HEAD, "https://x.test/a/") == theirs.replace("</head>", f"{HEAD}</head>")
    # "canonical" in the head's text but no such link, and a canonical link only in the body: ours is added
    page = '<head><title>canonical</title></head><body><link rel="canonical" href="/b/"></body>'
    ours = f'{HEAD}<link rel="canonical" href="https://x.test/a/">\n'
    assert insert(page, HEAD, "https://x.test/a/") == page.replace("</head>", f"{ours}</head>")


def test_only_the_first_head_end_gets_the_tags() -> None:
    page = "<head></head><body><pre>&lt;/head&gt; </head></pre></body>"
    assert insert(page, HEAD, None) == f"<head>{HEAD}</head><body><pre>&lt;/head&gt; </head></pre></body>"


def test_any_spelling_of_the_head_end_is_found_and_a_page_without_one_is_left_alone() -> None:
    assert insert("<head></HEAD >", HEAD, None) == f"<head>{HEAD}</HEAD >"
    assert insert("<p>no head</p>", HEAD, "https://x.test/") is None


def test_absolute_urls_join_as_urljoin_does() -> None:
    assert absolute("https://x.test/site/", "blog/a/") == "https://x.test/site/blog/a/"
    assert absolute("https://x.test/site/", "../up/") == "https://x.test/up/"
    assert absolute("https://x.test/site", "blog/") == "https://x.test/blog/"
