"""The theme override that `mkdocs-blogsvc export --theme-dir DIR` writes, for generators that
run no plugins (Zensical).

The plugin inserts JSON-LD, Open Graph, `article:` and keywords tags into each article page in
its `on_post_page` hook, which Zensical never runs. Exported pages carry the JSON-LD in their
body and the values of the other tags in a `blogsvc` front matter mapping; Material's and
Zensical's templates read `page.meta`, so a small override (`blogsvc-head.html`, included in
`{% block extrahead %}` of `main.html`) prints them into `<head>`. Pages without that mapping,
the plugin's own included, get nothing from it, so one `custom_dir` serves both generators.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mkdocs_blogsvc.fileio import atomic_write

HEAD_PARTIAL = "blogsvc-head.html"
MAIN = "main.html"


@dataclass(frozen=True)
class OverrideResult:
    """What `write_theme_override` did, for the command's output."""

    written: list[Path]
    #: A main.html that was already there and does not include the partial: the user's to edit.
    main_to_edit: Path | None = None


def _template(name: str) -> bytes:
    return (resources.files("mkdocs_blogsvc") / "templates" / "theme" / name).read_bytes()


def write_theme_override(theme_dir: Path) -> OverrideResult:
    """Write `blogsvc-head.html` into `theme_dir` (ours: replaced when it differs) and
    `main.html` when there is none (the user's from then on: never changed once it exists)."""
    theme_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    partial, data = theme_dir / HEAD_PARTIAL, _template(HEAD_PARTIAL)
    if not partial.is_file() or partial.read_bytes() != data:
        atomic_write(partial, data)
        written.append(partial)
    main = theme_dir / MAIN
    if not main.exists():
        atomic_write(main, _template(MAIN))
        written.append(main)
        return OverrideResult(written)
    try:
        includes = HEAD_PARTIAL in main.read_text(encoding="utf-8", errors="replace")
    except OSError:
        includes = False
    return OverrideResult(written, None if includes else main)
