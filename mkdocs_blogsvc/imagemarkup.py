"""The article images' markup: intrinsic `width` and `height`, lazy loading after the first
image, and with `optimize_images` a `<picture>` offering the WebP variants.

Why a Markdown extension (a treeprocessor) rather than HTML written into the page file: the
page's images are Markdown images whose `src` MkDocs rewrites for the address the page ends up
at (Material's blog puts posts at `blog/2024/01/31/slug/`, and shows their excerpts on index,
archive and category pages at other depths). Raw HTML is never rewritten, so an `<img>` or
`<source srcset>` written into the page would break on all but one of those. The extension
runs after MkDocs' own rewriting (`relpath`, priority 0; Material's excerpts: 1), on every
page and excerpt of the site, and touches only `<img>` elements naming one of the plugin's
images (by file name: a hash, see `Cache.image_name`). Variants sit next to the original in the
site, so their URLs are the rewritten `src` with another file name.

With the sizes it writes `style="height:auto"`, so that a theme that caps images at the
column's width without it (MkDocs' own) keeps their aspect ratio. The first image of a page
(the cover, when there is one: likely the largest paint) is never lazy; every later one gets
`loading="lazy"` and `decoding="async"`. On the pages of Material's blog (index, archive,
categories, each pagination page) only the first excerpt's first image is eager. An author's
own `width` or `height` (attr_list) wins. An image whose header could not be read has no entry: its `<img>`
stays as it is.
"""

from __future__ import annotations

import xml.etree.ElementTree as etree
from collections.abc import Mapping

from markdown import Markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from mkdocs_blogsvc.imagesizes import ImageInfo

#: How wide the image shows, for the browser to pick a variant before layout: the full
#: viewport on narrow screens, at most the article column (Material's is about 720 px wide).
SIZES = "(max-width: 800px) 100vw, 800px"
#: Beside the sizes written: a theme that caps an image's width (`max-width: 100%`) without
#: `height: auto` (MkDocs' own theme) would keep the `height` attribute and squash the image.
#: The sanitiser keeps exactly this value on `<img>`.
HEIGHT_AUTO = "height:auto"
#: After MkDocs' `relpath` (0) and Material's excerpt one (1): `src` is final here.
PRIORITY = -5


class ImageMarkup(Extension):  # type: ignore[misc]  # untyped base class
    """One per plugin instance, added to `markdown_extensions` (Python-Markdown is untyped); `images` (file name -> info)
    is set by each build before pages are rendered."""

    def __init__(self) -> None:
        super().__init__()
        self.images: Mapping[str, ImageInfo] = {}
        #: the page of Material's blog the last excerpt was rendered for (`_first_on_its_page`).
        self.excerpts_on: object = None

    def extendMarkdown(self, md: Markdown) -> None:
        md.treeprocessors.register(_Annotate(md, self), f"blogsvc_images_{id(self)}", PRIORITY)


class _Annotate(Treeprocessor):  # type: ignore[misc]  # untyped base class
    def __init__(self, md: Markdown, owner: ImageMarkup) -> None:
        super().__init__(md)
        self.owner = owner

    def run(self, root: etree.Element) -> None:
        images = self.owner.images
        if not images:
            return
        found = list(root.iter("img"))
        if not found:
            return
        parents = {child: parent for parent in root.iter() for child in parent}
        first = found[0] if self._first_on_its_page() else None
        for img in found:
            info = lookup(images, img.get("src", ""))
            if info is None:
                continue
            annotate(img, info, lazy=img is not first)
            parent = parents.get(img)
            if info.variants and parent is not None and parent.tag != "picture":
                _wrap(parent, img, info)

    def _first_on_its_page(self) -> bool:
        """Whether this run's first image is the first of the page it is shown on. Not for an
        excerpt on a page of Material's blog (index, archive, category, and each of their
        pagination pages: each excerpt is a run of its own, with Material's `excerpt`
        treeprocessor, whose `base` is the page shown) unless it is the first excerpt rendered
        for that page: Material renders a page's excerpts one after the other, in its order."""
        if "excerpt" not in self.md.treeprocessors:
            return True
        shown_on = getattr(self.md.treeprocessors["excerpt"], "base", None)
        first = shown_on is not None and shown_on is not self.owner.excerpts_on
        self.owner.excerpts_on = shown_on
        return first


def lookup(images: Mapping[str, ImageInfo], src: str) -> ImageInfo | None:
    """The info of the plugin's image that `src` names (a relative URL ending in its name)."""
    if not src or "//" in src or ":" in src.split("/", 1)[0]:
        return None
    return images.get(src.rsplit("/", 1)[-1].split("?", 1)[0].split("#", 1)[0])


def annotate(img: etree.Element, info: ImageInfo, *, lazy: bool) -> None:
    if img.get("width") is None and img.get("height") is None:
        img.set("width", str(info.width))
        img.set("height", str(info.height))
        if img.get("style") is None:  # the aspect ratio kept where a theme only caps the width
            img.set("style", HEIGHT_AUTO)
    if lazy:
        img.set("loading", "lazy")
        img.set("decoding", "async")


def srcset(src: str, info: ImageInfo) -> str:
    """The variants' `srcset`, their URLs made from the original's (same folder)."""
    base = src[: len(src) - len(src.rsplit("/", 1)[-1])]
    return ", ".join(f"{base}{variant.name} {variant.width}w" for variant in info.variants)


def _wrap(parent: etree.Element, img: etree.Element, info: ImageInfo) -> None:
    """`<picture><source type="image/webp" srcset=... sizes=...><img ...></picture>` in place."""
    picture = etree.Element("picture")
    etree.SubElement(
        picture, "source", {"type": "image/webp", "srcset": srcset(img.get("src", ""), info), "sizes": SIZES}
    )
    index = list(parent).index(img)
    parent.remove(img)
    picture.tail, img.tail = img.tail, None
    picture.append(img)
    parent.insert(index, picture)
