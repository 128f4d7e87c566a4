"""The image markup as Python-Markdown writes it (`imagemarkup`), after MkDocs' own kind of
link rewriting: sizes, lazy loading after the first image, `<picture>` for variants."""

from __future__ import annotations

import markdown

from mkdocs_blogsvc.imagemarkup import SIZES, ImageMarkup
from mkdocs_blogsvc.imagesizes import ImageInfo, Variant

COVER = "0" * 32 + ".png"
INLINE = "1" * 32 + ".jpg"
WITH_VARIANTS = ImageInfo(
    1600, 900, 1_900_000, (Variant(480, 270, "c-480.webp", 4000), Variant(960, 540, "c-960.webp", 9000))
)


def render(source: str, images: dict[str, ImageInfo]) -> str:
    extension = ImageMarkup()
    extension.images = images
    return markdown.markdown(source, extensions=["attr_list", extension])


def test_sizes_and_lazy_loading_after_the_first_image() -> None:
    html = render(
        f"![Cover](../images/{COVER})\n\nText.\n\n![Inline](../images/{INLINE})\n\n![Remote](https://x.test/{INLINE})",
        {COVER: ImageInfo(1600, 900, 10), INLINE: ImageInfo(320, 200, 10)},
    )
    assert f'<img alt="Cover" height="900" src="../images/{COVER}" style="height:auto" width="1600" />' in html
    assert (
        f'<img alt="Inline" decoding="async" height="200" loading="lazy" src="../images/{INLINE}" '
        'style="height:auto" width="320" />' in html
    )
    assert (
        f'<img alt="Remote" src="https://x.test/{INLINE}" />' in html
    )  # another host's file of the same name: untouched


def test_variants_become_a_picture_whose_urls_follow_the_rewritten_src() -> None:
    html = render(f"Before ![Cover](../../images/{COVER}) after.", {COVER: WITH_VARIANTS})
    assert html == (
        f'<p>Before <picture><source sizes="{SIZES}" srcset="../../images/c-480.webp 480w, ../../images/c-960.webp 960w" '
        f'type="image/webp" /><img alt="Cover" height="900" src="../../images/{COVER}" style="height:auto" width="1600" />'
        "</picture> after.</p>"
    )


def test_an_authors_own_size_wins_and_unknown_images_stay_bare() -> None:
    html = render(
        f'![A](../images/{COVER}){{ width="300" }}\n\n![B](../images/{"2" * 32}.png)', {COVER: ImageInfo(1600, 900, 10)}
    )
    assert 'width="300"' in html and 'height="900"' not in html
    assert f'<img alt="B" src="../images/{"2" * 32}.png" />' in html


def test_on_the_pages_of_materials_blog_only_the_first_excerpt_shown_on_each_page_is_eager() -> None:
    """Material renders each excerpt as a Markdown run of its own, with its `excerpt`
    treeprocessor naming the page it is shown on (`base`), a page's excerpts one after the
    other. Found by review: every excerpt's cover was eager; then, on pages 2 and later of a
    paginated index, none was."""
    from markdown.treeprocessors import Treeprocessor

    class Excerpt(Treeprocessor):  # what Material registers, as far as it matters here
        base: object = None

        def run(self, root: object) -> None:
            return None

    extension = ImageMarkup()
    extension.images = {COVER: ImageInfo(1600, 900, 10)}
    md = markdown.Markdown(extensions=[extension])
    excerpt = Excerpt(md)
    md.treeprocessors.register(excerpt, "excerpt", 0)
    index, page_2 = object(), object()
    shown = []
    for base in (index, index, page_2, page_2):
        excerpt.base = base
        shown.append("lazy" if 'loading="lazy"' in md.reset().convert(f"![Cover](images/{COVER})") else "eager")
    assert shown == ["eager", "lazy", "eager", "lazy"]
