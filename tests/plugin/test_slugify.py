"""Slugs made from titles (the service's new articles, the plugin's replacement for an unusable
slug): Latin letters without a decomposition are spelled out, not dropped (review finding)."""

from __future__ import annotations

import pytest

from mkdocs_blogsvc.slugs import slugify


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Über Straße", "uber-strasse"),
        ("Ærø og Œuvre", "aero-og-oeuvre"),
        ("Łódź, Þórsmörk, Đorđe", "lodz-thorsmork-dorde"),
        ("Ação e coração", "acao-e-coracao"),
        ("日本語", "article"),
    ],
)
def test_titles_become_ascii_words(title: str, slug: str) -> None:
    assert slugify(title) == slug
