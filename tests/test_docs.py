"""The documentation covers the product: every setting and every command is on the site's pages.

The lists come from the code (the config class MkDocs validates, the click group walked
recursively), so a setting or command added without documentation fails here and names itself.
The pages are `example-site/docs/reference/*.md`, which `mkdocs-blogsvc demo` builds as a site.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.config import BlogServiceConfig

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "example-site"
PAGES = SITE / "docs" / "reference"
README_LIMIT = 250


def _pages_text() -> str:
    pages = sorted(PAGES.glob("*.md"))
    assert pages, f"no documentation pages in {PAGES}"
    return "\n".join(page.read_text(encoding="utf-8") for page in pages)


def _code_and_headings(markdown: str) -> list[str]:
    """The places a name counts as documented: inline code, fenced code lines, headings."""
    found: list[str] = []
    fence = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            found.append(line.strip())
            continue
        if re.match(r"^#{1,6} ", line):
            found.append(line.lstrip("#").strip())
        found.extend(re.findall(r"`([^`\n]+)`", line))
    return found


def _settings() -> list[str]:
    return [name for name, _option in BlogServiceConfig._schema]


def _commands(group: click.Group, parents: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and subcommand path, e.g. ('server', 'admin', 'create-user')."""
    ctx = click.Context(group, info_name="mkdocs-blogsvc")
    paths: list[tuple[str, ...]] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        paths.append((*parents, name))
        if isinstance(command, click.Group):
            paths.extend(_commands(command, (*parents, name)))
    return paths


def _setting_documented(name: str, places: list[str]) -> bool:
    """Documented: a code span or heading that starts with the name (`on_error`, `on_error: fail`)."""
    pattern = re.compile(rf"^{re.escape(name)}(?![\w-])")
    return any(pattern.match(place) for place in places)


def _command_documented(path: tuple[str, ...], places: list[str]) -> bool:
    """Documented: a code span or heading that starts with the command (`create-user --username U`),
    or a command line that names its whole path (`mkdocs-blogsvc server admin --db x.db seed`)."""
    name = path[-1]
    starts = re.compile(
        rf"^(mkdocs-blogsvc )?{re.escape(' '.join(path))}(\s|$)|^{re.escape(name)}(\s|$)"
    )
    words = re.compile(
        r"\bmkdocs-blogsvc\b" + "".join(rf"\s.*\b{re.escape(part)}\b" for part in path)
    )
    return any(starts.search(place) or words.search(place) for place in places)


def test_the_walk_finds_settings_and_nested_commands() -> None:
    """Guards the two tests below against passing on empty lists."""
    assert {"base_url", "client_id", "on_error"} <= set(_settings())
    paths = _commands(main)
    assert ("login",) in paths and ("server", "run") in paths
    assert ("server", "admin", "create-user") in paths


def test_the_matchers_reject_what_is_not_documented() -> None:
    places = _code_and_headings(
        "# Settings\n\nUse `base_url` and `mkdocs-blogsvc server admin --db b seed`.\n"
    )
    assert _setting_documented("base_url", places)
    assert not _setting_documented("base", places)
    assert not _setting_documented("no_such_setting", places)
    assert _command_documented(("server", "admin", "seed"), places)
    assert not _command_documented(("server", "admin", "create-user"), places)
    assert not _command_documented(("login",), places)


def test_every_setting_is_documented() -> None:
    places = _code_and_headings(_pages_text())
    missing = [name for name in _settings() if not _setting_documented(name, places)]
    assert not missing, (
        f"settings of BlogServiceConfig not documented: {missing}; add each as `name` to the table in "
        f"{(PAGES / 'settings.md').relative_to(REPO)} (and describe it on the page it belongs to)"
    )


def test_every_command_is_documented() -> None:
    places = _code_and_headings(_pages_text())
    missing = [" ".join(path) for path in _commands(main) if not _command_documented(path, places)]
    assert not missing, (
        f"commands not documented: {missing}; document each on a page under {PAGES.relative_to(REPO)} "
        "(as `name ...` in a table or heading, or `mkdocs-blogsvc <command>` in an example)"
    )


def test_every_reference_page_is_in_the_nav() -> None:
    nav = (SITE / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [
        page.name for page in sorted(PAGES.glob("*.md")) if f"reference/{page.name}" not in nav
    ]
    assert not missing, f"pages missing from the nav of example-site/mkdocs.yml: {missing}"


def test_readme_is_short_and_keeps_the_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.count("\n") + (not readme.endswith("\n"))
    assert lines < README_LIMIT, (
        f"README.md has {lines} lines; keep it under {README_LIMIT}: move reference into {PAGES}"
    )
    block = re.search(
        r"<!-- test-command:start -->\n```sh\n(.+?)\n```\n<!-- test-command:end -->",
        readme,
        re.DOTALL,
    )
    assert block is not None, (
        "README.md lost its test-command markers around one ```sh block (.ci/run reads it)"
    )
    assert "pytest" in block.group(1)


def test_readme_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [target.split("#")[0] for target in targets if not re.match(r"^[a-z]+:|^#", target)]
    assert local, "README.md should link the documentation pages"
    broken = [target for target in local if not (REPO / target).exists()]
    assert not broken, f"README.md links to missing files: {broken}"
