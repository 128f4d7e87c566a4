"""JSON-LD rewritten to describe the site's page: downloaded images and the page's URL."""

from __future__ import annotations

import copy

from mkdocs_blogsvc.jsonld import localise

REMOTE = "https://media.service.example/m/cover-01.png"
INLINE = "https://media.service.example/m/inline.png"
SITE = "https://docs.example.com/blog/assets/cover-01.png"
PAGE = "https://docs.example.com/blog/2026/01/02/hello/"
FACTS = {
    "headline": "Hello again",
    "datePublished": "2026-01-02T10:00:00.000Z",
    "dateModified": "2026-03-04T10:00:00.000Z",
}


def sent() -> dict[str, object]:
    return {
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": "Hello",
        "image": REMOTE,
        "url": "https://blog.service.example/hello",
        "author": {"@type": "Person", "name": "Ann", "url": "https://blog.service.example/ann"},
        "publisher": {
            "@type": "Organization",
            "name": "Svc",
            "logo": {"@type": "ImageObject", "url": "https://media.service.example/logo.png"},
        },
        "wordCount": 120,
    }


def test_image_names_the_site_copy_and_url_the_page() -> None:
    data = sent()
    original = copy.deepcopy(data)
    result = localise(data, images={REMOTE: SITE}, page_url=PAGE, facts={})
    assert result["image"] == SITE
    assert result["url"] == PAGE
    assert result["mainEntityOfPage"] == PAGE
    for key in ("@context", "@type", "headline", "author", "publisher", "wordCount"):
        assert result[key] == original[key], key
    assert data == original  # the cached data is not changed in place


def test_without_a_page_url_the_services_page_is_not_named() -> None:
    """No `site_url` (or an exported page): the service's `url` and `mainEntityOfPage` would say
    the article's page is on the service; they go, the images still name the site's copies."""
    data = {**sent(), "mainEntityOfPage": {"@type": "WebPage", "@id": "https://blog.service.example/hello"}}
    result = localise(data, images={REMOTE: "../../assets/cover-01.png"}, page_url=None, facts={})
    assert result["image"] == "../../assets/cover-01.png"
    assert "url" not in result and "mainEntityOfPage" not in result
    assert result["author"] == sent()["author"]  # other nodes' url are the service's to name


def test_images_in_lists_and_image_objects() -> None:
    data = {"@type": "Article", "image": [REMOTE, {"@type": "ImageObject", "url": INLINE, "contentUrl": INLINE}]}
    result = localise(data, images={REMOTE: SITE, INLINE: "https://docs.example.com/i.png"}, page_url=PAGE, facts={})
    assert result["image"] == [
        SITE,
        {
            "@type": "ImageObject",
            "url": "https://docs.example.com/i.png",
            "contentUrl": "https://docs.example.com/i.png",
        },
    ]


def test_image_not_downloaded_is_kept() -> None:
    result = localise(sent(), images={}, page_url=PAGE, facts={})
    assert result["image"] == REMOTE


def test_main_entity_object_keeps_its_keys() -> None:
    data = {"@type": "BlogPosting", "mainEntityOfPage": {"@type": "WebPage", "@id": "https://svc/x", "name": "n"}}
    result = localise(data, images={}, page_url=PAGE, facts={})
    assert result["mainEntityOfPage"] == {"@type": "WebPage", "@id": PAGE, "name": "n"}


def test_graph_rewrites_only_the_article_node() -> None:
    data = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "Organization", "url": "https://svc.example/"},
            {"@type": ["BlogPosting"], "url": "https://svc.example/p", "image": REMOTE},
        ],
    }
    result = localise(data, images={REMOTE: SITE}, page_url=PAGE, facts={})
    assert result["@graph"][0] == {"@type": "Organization", "url": "https://svc.example/"}
    assert result["@graph"][1]["url"] == PAGE
    assert result["@graph"][1]["image"] == SITE


def test_cover_added_when_the_data_names_no_image() -> None:
    data = {"@type": "BlogPosting", "headline": "h"}
    assert localise(data, images={}, page_url=PAGE, facts={}, cover_url=SITE)["image"] == SITE
    assert localise(sent(), images={}, page_url=PAGE, facts={}, cover_url=SITE)["image"] == REMOTE


def test_the_articles_title_and_dates_win() -> None:
    """The service's data may predate the article's last edit: the page's heading and Open Graph
    dates are the article's, and so are the JSON-LD's, on the article node only."""
    data = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "Organization", "name": "Svc"},
            {**sent(), "datePublished": "2025-12-31T00:00:00Z", "dateModified": "2025-12-31T00:00:00Z"},
        ],
    }
    result = localise(data, images={}, page_url=PAGE, facts=FACTS)
    assert result["@graph"][0] == {"@type": "Organization", "name": "Svc"}
    assert {key: result["@graph"][1][key] for key in FACTS} == FACTS
    assert result["@graph"][1]["wordCount"] == 120


def test_the_facts_go_to_the_article_a_page_node_names_and_never_to_another_type() -> None:
    page = {"@type": "WebPage", "mainEntity": {"@type": "BlogPosting", "headline": "Old", "dateModified": "2020-01-01"}}
    result = localise(page, images={}, page_url=PAGE, facts=FACTS)
    assert {key: result["mainEntity"][key] for key in FACTS} == FACTS
    event = {"@type": "Event", "name": "Launch"}
    assert localise(event, images={}, page_url=PAGE, facts=FACTS) == {**event, "url": PAGE, "mainEntityOfPage": PAGE}


# --- found by mutation testing -------------------------------------------------------------------


def test_a_graph_that_is_no_list_leaves_the_top_level_node_the_article() -> None:
    for graph in ("junk", {"@type": "BlogPosting"}):
        result = localise({**sent(), "@graph": graph}, images={}, page_url=PAGE, facts=FACTS)
        assert result["url"] == PAGE and result["headline"] == "Hello again"


def test_types_that_are_no_strings_are_ignored_not_a_crash() -> None:
    data = {
        "@graph": [
            {"@type": [{"x": 1}, ["y"], "BlogPosting"], "url": "https://blog.service.example/x"},
            {"@type": {"x": 1}, "url": "https://blog.service.example/y"},
        ]
    }
    result = localise(data, images={}, page_url=PAGE, facts={})
    assert result["@graph"][0]["url"] == PAGE
    assert result["@graph"][1]["url"] == "https://blog.service.example/y"


def test_an_empty_image_gets_the_downloaded_cover() -> None:
    for empty in (None, "", []):
        result = localise({**sent(), "image": empty}, images={}, page_url=PAGE, facts={}, cover_url=SITE)
        assert result["image"] == SITE
