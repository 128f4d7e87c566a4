"""`mkdocs-blogsvc new DIR`: a site that builds at once, the way `mkdocs new` starts one.

It writes `mkdocs.yml` (Material, its blog and tags plugins, RSS, and this plugin with the
service's address and the client's id), `docs/index.md` and the blog's index, a `.gitignore`
for the credentials and the cache, the CI recipe as `.github/workflows/publish.yml`, and the
theme override for Zensical (`overrides/`, as `export --theme-dir` writes it). The client id is
written in the open: a public client's id is not a secret (secrets come from `!ENV`).

The files are templates in `templates/scaffold/`, rendered by Jinja2 with `[[ ... ]]` for
values, so that the workflow's own `${{ ... }}` expressions pass through untouched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import jinja2

from mkdocs_blogsvc import __version__, config, installed
from mkdocs_blogsvc.errors import ConfigurationError
from mkdocs_blogsvc.fileio import atomic_write
from mkdocs_blogsvc.shared import DEFAULT_BASE_URL, DEV_ADDR_BESIDE_SERVICE

#: Each file written (relative to DIR) and its template in templates/scaffold/ (flat, and with
#: no leading dot: package data globs skip dot files).
FILES = {
    "mkdocs.yml": "mkdocs.yml",
    "docs/index.md": "index.md",
    "docs/blog/index.md": "blog-index.md",
    ".gitignore": "gitignore",
    ".github/workflows/publish.yml": "publish.yml",
}
OVERRIDES = "overrides"


#: What the workflow installs when this copy came from a folder (the CI recipe's form, to fill in).
FROM_A_REPOSITORY = f"{installed.DISTRIBUTION} @ git+https://github.com/OWNER/mkdocs-blogsvc@COMMIT"


@dataclass(frozen=True)
class NewSite:
    """What `new` wrote, and what its owner must still do (one line each), for the command's output."""

    folder: Path
    written: list[Path]
    to_do: list[str]


def check_base_url(value: str) -> str:
    """The service's address, as the plugin would read it from mkdocs.yml; one line if not."""
    try:
        return config._base_url(value)  # the one definition of a valid base_url
    except ConfigurationError as exc:
        message = str(exc).removeprefix("blogsvc: ").replace("set it in mkdocs.yml to", "pass")
        raise ConfigurationError(f"--base-url: {message}") from None


def check_client_id(value: str) -> str:
    """A client id is one printable word: what the service issued, pasted."""
    client_id = value.strip()
    if not client_id or not client_id.isprintable() or any(c.isspace() for c in client_id):
        raise ConfigurationError(
            f"--client-id {value!r} is not a client id (one word with no spaces): give the client_id the "
            "service issued when the site was registered"
        )
    return client_id


def check_folder(folder: Path) -> None:
    """`folder` may be written into: it does not exist, or is an empty folder. One line if not."""
    try:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise ConfigurationError(
                f"{folder} already exists and is not an empty folder: `new` writes only into a new or empty "
                "folder; choose another DIR"
            )
    except OSError as exc:
        raise ConfigurationError(f"cannot read {folder} ({exc.strerror or exc}): choose another DIR") from None


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mkdocs_blogsvc", "templates/scaffold"),
        variable_start_string="[[",
        variable_end_string="]]",
        keep_trailing_newline=True,
        trim_blocks=True,  # a `{% if %}` line leaves no empty line behind
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    # A JSON string is a YAML double-quoted scalar: any name or address stays one value.
    env.filters["yaml"] = lambda value: json.dumps(str(value), ensure_ascii=False)
    return env


def write_site(folder: Path, *, base_url: str, client_id: str, site_name: str | None = None) -> NewSite:
    """Write the new site into `folder` (checked first: new or empty)."""
    from mkdocs_blogsvc.theme_override import write_theme_override

    base_url, client_id = check_base_url(base_url), check_client_id(client_id)
    check_folder(folder)
    name = site_name or folder.resolve().name.replace("-", " ").replace("_", " ").strip().title() or "My Site"
    requirement = installed.requirement(__version__)
    values = {
        "site_name": name,
        "base_url": base_url,
        "client_id": client_id,
        "requirement": requirement or FROM_A_REPOSITORY,
        "requirement_to_fill": requirement is None,
        "dev_addr": DEV_ADDR_BESIDE_SERVICE if _on_the_serve_port(base_url) else None,
    }
    to_do = []
    if requirement is None:
        to_do.append(
            "this copy of mkdocs-blogsvc was installed from a folder, which CI cannot reach: in "
            ".github/workflows/publish.yml, replace OWNER and COMMIT by the repository and commit to install"
        )
    env = _environment()
    written: list[Path] = []
    try:
        for target, template in FILES.items():
            path = folder / target
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, env.get_template(template).render(values).encode("utf-8"))
            written.append(path)
        written.extend(write_theme_override(folder / OVERRIDES).written)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write the new site into {folder} ({exc.strerror or exc}): choose a folder this user can "
            "write to, on a disk with free space"
        ) from None
    return NewSite(folder, written, to_do)


def _on_the_serve_port(base_url: str) -> bool:
    """Whether the service listens where `mkdocs serve` would by default (the reference
    service's default address), so that the new site must serve elsewhere."""
    parts, default = urlsplit(base_url), urlsplit(DEFAULT_BASE_URL)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.hostname in ("127.0.0.1", "localhost") and port == default.port
