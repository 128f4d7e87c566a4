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
    starts = re.compile(rf"^(mkdocs-blogsvc )?{re.escape(' '.join(path))}(\s|$)|^{re.escape(name)}(\s|$)")
    words = re.compile(r"\bmkdocs-blogsvc\b" + "".join(rf"\s.*\b{re.escape(part)}\b" for part in path))
    return any(starts.search(place) or words.search(place) for place in places)


def test_the_walk_finds_settings_and_nested_commands() -> None:
    """Guards the two tests below against passing on empty lists."""
    assert {"base_url", "client_id", "on_error"} <= set(_settings())
    paths = _commands(main)
    assert ("login",) in paths and ("server", "run") in paths
    assert ("server", "admin", "create-user") in paths


def test_the_matchers_reject_what_is_not_documented() -> None:
    places = _code_and_headings("# Settings\n\nUse `base_url` and `mkdocs-blogsvc server admin --db b seed`.\n")
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
    missing = [page.name for page in sorted(PAGES.glob("*.md")) if f"reference/{page.name}" not in nav]
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
    assert block is not None, "README.md lost its test-command markers around one ```sh block (.ci/run reads it)"
    assert "pytest" in block.group(1)


def test_readme_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [target.split("#")[0] for target in targets if not re.match(r"^[a-z]+:|^#", target)]
    assert local, "README.md should link the documentation pages"
    broken = [target for target in local if not (REPO / target).exists()]
    assert not broken, f"README.md links to missing files: {broken}"


# --- what the pages say agrees with the code ----------------------------------------------------


def _yaml_default(value: object) -> str:
    """A default as the settings table writes it (`true`, `60`, `.cache/blogsvc`)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _settings_table() -> dict[str, str]:
    """Setting name -> the row's "Default" and "What it does" cells, from settings.md."""
    text = (PAGES / "settings.md").read_text(encoding="utf-8")
    return {name: rest for name, rest in re.findall(r"^\| `(\w+)` \| (.+)$", text, re.MULTILINE)}


def test_settings_table_shows_the_code_defaults_and_choices() -> None:
    """A default or an allowed value changed in config.py without the table fails here."""
    from mkdocs.config import config_options as c

    rows = _settings_table()
    wrong: list[str] = []
    for name, option in BlogServiceConfig._schema:
        row = rows.get(name)
        if row is None:
            continue  # test_every_setting_is_documented names it
        default_cell = row.split(" | ", 1)[0].strip()
        default = getattr(option, "default", None)
        if default is not None and default_cell != f"`{_yaml_default(default)}`":
            wrong.append(f"{name}: table says {default_cell}, the code {_yaml_default(default)!r}")
        if isinstance(option, c.Choice):
            missing = [choice for choice in option.choices if f"`{choice}`" not in row]
            if missing:
                wrong.append(f"{name}: allowed values {missing} not described")
    assert not wrong, f"settings.md disagrees with BlogServiceConfig: {wrong}"


def _command_objects(group: click.Group) -> list[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group, info_name="mkdocs-blogsvc")
    found: list[tuple[tuple[str, ...], click.Command]] = []
    for path in _commands(group):
        command: click.Command | None = group
        for part in path:
            assert isinstance(command, click.Group)
            command = command.get_command(ctx, part)
        assert command is not None
        found.append((path, command))
    return found


def test_every_command_option_is_documented() -> None:
    """Each long option of each command appears in a code span, heading or example."""
    text = "\n".join(_code_and_headings(_pages_text()))
    missing = []
    for path, command in _command_objects(main):
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            names = [name for name in (*param.opts, *param.secondary_opts) if name.startswith("--")]
            if names and names != ["--help"] and not any(re.search(rf"{re.escape(n)}(?![\w-])", text) for n in names):
                missing.append(f"{' '.join(path)} {names[0]}")
    assert not missing, f"options not documented on any page under {PAGES.relative_to(REPO)}: {missing}"


def test_option_tables_show_the_code_defaults() -> None:
    """A table row `| `--opt` | `default` |` (server run's) agrees with the option's default."""
    defaults: dict[str, set[str]] = {}
    for _path, command in _command_objects(main):
        for param in command.params:
            if isinstance(param, click.Option) and param.default not in (None, False, ()):
                for name in param.opts:
                    defaults.setdefault(name, set()).add(str(param.default))
    rows = re.findall(r"^\| `(--[\w-]+)` \| `([^`]+)` \|", _pages_text(), re.MULTILINE)
    assert rows, "no option table with a Default column found (server.md's `server run` table)"
    wrong = [
        f"{option}: documented {shown}, the code {sorted(defaults[option])}"
        for option, shown in rows
        if option in defaults and shown not in defaults[option]
    ]
    assert not wrong, f"documented option defaults differ from the code: {wrong}"


def _anchors(page: Path) -> set[str]:
    """The heading ids MkDocs gives `page` (Python-Markdown's toc, as in example-site/mkdocs.yml)."""
    import markdown

    html = markdown.Markdown(extensions=["toc", "tables", "attr_list", "md_in_html", "admonition"]).convert(
        page.read_text(encoding="utf-8")
    )
    return set(re.findall(r'\bid="([^"]+)"', html))


def test_links_between_pages_and_their_anchors_resolve() -> None:
    """`[x](page.md#anchor)` on every page names a page and a heading that exist (a renamed
    heading breaks links silently: MkDocs only logs missing anchors at INFO)."""
    docs = SITE / "docs"
    broken: list[str] = []
    for page in sorted(docs.rglob("*.md")):
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        text = re.sub(r"``.+?``|`[^`\n]+`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(docs)}: {target}"
            if not dest.is_file():
                broken.append(f"{where} (no such page)")
            elif anchor and anchor not in _anchors(dest):
                broken.append(f"{where} (no such heading)")
    assert not broken, f"broken links in {docs.relative_to(REPO)}: {broken}"
