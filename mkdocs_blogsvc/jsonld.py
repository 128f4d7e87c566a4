"""The article's schema.org JSON-LD, made to describe the page on the site.

The service sends `schemaOrgJson` written for its own hosted blog: its `image` names the
service's media host and its `url` (when present) the service's page. Search engines index
what the page says, so on the site:

- every string in the data that is the URL of an image the plugin downloaded (`image` as a
  string, a list or an `ImageObject`'s `url`/`contentUrl`/`thumbnailUrl`, wherever it sits)
  becomes the URL of the site's copy (absolute when `site_url` is set);
- `url` and `mainEntityOfPage` of the article node name the page on the site when `site_url`
  is set (a `mainEntityOfPage` object keeps its other keys and gets the page as `@id`); the
  plugin reads the page's URL from the build, `export` computes it from mkdocs.yml
  (`redirects.PostUrls`); when it is not known (no `site_url`) they are removed: the service's
  would tell search engines that the article's page is the service's, not this one;
- `headline`, `datePublished` and `dateModified` of the article node (and of the article a
  page node names as its `mainEntity`) are the article's own title and dates (`facts`): the
  page shows them in its heading and its Open Graph tags, and the service's data may be older
  than its last edit (written when the article was generated);
- when the data names no `image` and the article's cover was downloaded, the cover is added;
  with its size known, the cover (added, or named as a plain URL) is an `ImageObject` with
  `width` and `height` (what search engines read for rich results);
- everything else is kept exactly as the service sent it.

Only the article node is rewritten for `url`: the top-level object, or the `@graph` entries
whose `@type` is an article type. Other nodes' `url` (author, publisher) are the service's to
name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mkdocs_blogsvc.models import Article, format_timestamp

#: schema.org types of the node that describes the page itself.
ARTICLE_TYPES = frozenset(
    {
        "Article",
        "BlogPosting",
        "NewsArticle",
        "TechArticle",
        "Report",
        "ScholarlyArticle",
        "SocialMediaPosting",
        "LiveBlogPosting",
        "AnalysisNewsArticle",
        "OpinionNewsArticle",
        "ReportageNewsArticle",
        "ReviewNewsArticle",
        "BackgroundNewsArticle",
        "AskPublicNewsArticle",
        "WebPage",
        "CreativeWork",
    }
)


def localise(
    data: Any,
    *,
    images: Mapping[str, str],
    page_url: str | None,
    facts: Mapping[str, str],
    cover_url: str | None = None,
    cover_size: tuple[int, int] | None = None,
) -> Any:
    """A copy of `data` (JSON values) for the site's page.

    `images`: remote URL -> the site's URL of the downloaded copy (absolute with `site_url`,
    else relative to the page). `page_url`: the page's absolute URL, None when it is not known
    (without `site_url`, or an export that cannot compute it): then the node has no `url` or `mainEntityOfPage`.
    `facts`: the article's `headline`, `datePublished` and `dateModified` (`article_facts`).
    `cover_url`: the site's URL of the cover image, added as `image` if the data has none.
    """
    replaced = _replace_urls(data, images)
    if isinstance(replaced, dict):
        if "@graph" in replaced and isinstance(replaced["@graph"], list):
            nodes = [node for node in replaced["@graph"] if _is_article(node)]
        else:
            nodes = [replaced]
        for node in nodes:
            _describe_page(node, page_url, cover_url, cover_size)
            for described in (node, node.get("mainEntity")):  # a WebPage's article too
                if _is_article(described):
                    described.update(facts)
    return replaced


def _replace_urls(value: Any, images: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return images.get(value, value)
    if isinstance(value, list):
        return [_replace_urls(item, images) for item in value]
    if isinstance(value, dict):
        return {key: _replace_urls(item, images) for key, item in value.items()}
    return value


def _is_article(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return any(isinstance(item, str) and item in ARTICLE_TYPES for item in kinds)


def image_object(url: str, size: tuple[int, int]) -> dict[str, Any]:
    """A schema.org ImageObject of an image on the site whose size is known."""
    return {"@type": "ImageObject", "url": url, "width": size[0], "height": size[1]}


def _describe_page(
    node: dict[str, Any], page_url: str | None, cover_url: str | None, cover_size: tuple[int, int] | None = None
) -> None:
    if page_url:
        node["url"] = page_url
        entity = node.get("mainEntityOfPage")
        if isinstance(entity, dict):
            node["mainEntityOfPage"] = {**entity, "@id": page_url}
        else:
            node["mainEntityOfPage"] = page_url
    else:
        node.pop("url", None)
        node.pop("mainEntityOfPage", None)
    if cover_url and not node.get("image"):
        node["image"] = cover_url
    if cover_url and cover_size and node.get("image") == cover_url:
        node["image"] = image_object(cover_url, cover_size)


def article_facts(article: Article) -> dict[str, str]:
    """The article's title and dates in schema.org's names. They win over the same fields of the
    service's `schemaOrgJson` (`jsonld.localise`), which may predate the article's last edit."""
    return {
        "headline": article.title,
        "datePublished": format_timestamp(article.published_at),
        "dateModified": format_timestamp(article.updated_at),
    }


def for_page(
    article: Article,
    *,
    page_url: str | None,
    image_url: str | None,
    language: str | None,
    images: Mapping[str, str] | None = None,
    image_size: tuple[int, int] | None = None,
) -> Any:
    """The JSON-LD of the article's page, as the plugin's head and the exported page's both carry
    it (one function: the same data either way): the service's `schemaOrgJson` made to describe
    the page (`localise`), or, when it is null, a schema.org BlogPosting. Arguments as for
    `render.Renderer.head`."""
    if article.schema_org_json is None:
        data = blog_posting(article, page_url=page_url, image_url=image_url, language=language)
        if image_url and image_size:
            data["image"] = image_object(image_url, image_size)
        return data
    local_cover = image_url if image_url != article.cover_image_url else None
    return localise(
        article.schema_org_json,
        images=images or {},
        page_url=page_url,
        facts=article_facts(article),
        cover_url=local_cover,
        cover_size=image_size,
    )


def blog_posting(
    article: Article, *, page_url: str | None, image_url: str | None, language: str | None
) -> dict[str, Any]:
    """A schema.org BlogPosting for articles whose `schemaOrgJson` is null."""
    data: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        **article_facts(article),
        "description": article.description,
        "image": image_url,
        "keywords": list(article.seo_keywords) or None,
        "inLanguage": language,
        "url": page_url,
        "mainEntityOfPage": page_url,
    }
    return {key: value for key, value in data.items() if value is not None}
