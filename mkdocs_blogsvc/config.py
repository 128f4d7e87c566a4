"""The plugin's settings (`plugins: - blogsvc: ...` in mkdocs.yml) and their resolved form.

`BlogServiceConfig` is what MkDocs validates; `Settings` is the same, resolved once (paths made
absolute next to mkdocs.yml, defaults that depend on other settings filled in, environment
fallbacks applied). The plugin and the CLI both work from `Settings`, never from raw config.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mkdocs.config import base
from mkdocs.config import config_options as c

from mkdocs_blogsvc.errors import ConfigurationError
from mkdocs_blogsvc.redaction import hold
from mkdocs_blogsvc.shared import DEFAULT_BASE_URL

DEFAULT_SCOPE = "articles:read blog:read"
DEFAULT_CREDENTIALS_FILE = ".blogsvc/credentials.json"
DEFAULT_CACHE_DIR = ".cache/blogsvc"

#: Environment variables read when the matching setting is absent (CI seeds credentials this way).
ENV_CLIENT_ID = "BLOGSVC_CLIENT_ID"
ENV_CLIENT_SECRET = "BLOGSVC_CLIENT_SECRET"
ENV_REFRESH_TOKEN = "BLOGSVC_REFRESH_TOKEN"


#: Upper bounds of the durations in seconds.
ONE_DAY = 86400
ONE_YEAR = 365 * ONE_DAY


class BlogServiceConfig(base.Config):
    """Every setting of the plugin, with its default. The settings page of the docs describes each one."""

    enabled = c.Type(bool, default=True)
    base_url = c.Type(str, default=DEFAULT_BASE_URL)
    client_id = c.Optional(c.Type(str))
    client_secret = c.Optional(c.Type(str))  # use !ENV: never write a secret into mkdocs.yml
    scope = c.Type(str, default=DEFAULT_SCOPE)
    redirect_port = c.Type(int, default=0)
    credentials_file = c.Type(str, default=DEFAULT_CREDENTIALS_FILE)
    blog_dir = c.Type(str, default="blog")
    posts_dir = c.Optional(c.Type(str))  # default: {blog_dir}/posts
    cache_dir = c.Type(str, default=DEFAULT_CACHE_DIR)
    download_images = c.Type(bool, default=True)
    page_template = c.Optional(c.File(exists=True))
    head_template = c.Optional(c.File(exists=True))
    offline = c.Type(bool, default=False)
    # A failed sync: build from the cache with a warning, except in CI with nothing cached (`auto`).
    on_error = c.Choice(("auto", "warn", "fail"), default="auto")
    # No credentials at all: warn on a person's machine, fail in CI (`auto`); see access.py.
    on_missing_credentials = c.Choice(("auto", "warn", "fail"), default="auto")
    sync_interval = c.Type(int, default=60)
    timeout = c.Type((int, float), default=30)
    # Off by default: article HTML passes the nh3 allowlist (see sanitize.py). True keeps raw
    # HTML (embeds, scripts) as the service sent it: only for a service you fully trust.
    trust_article_html = c.Type(bool, default=False)
    redirects = c.Type(bool, default=True)
    full_sync_interval = c.Type(int, default=86400)
    # WebP variants of the article images at a few widths (Pillow; see variants.py).
    optimize_images = c.Type(bool, default=False)


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one plugin instance (one connected blog)."""

    base_url: str
    client_id: str | None
    client_secret: str | None = field(repr=False)
    scope: str
    redirect_port: int
    credentials_file: Path
    blog_dir: str
    posts_dir: str
    cache_dir: Path
    download_images: bool = True
    page_template: Path | None = None
    head_template: Path | None = None
    offline: bool = False
    on_error: str = "auto"
    on_missing_credentials: str = "auto"
    sync_interval: int = 60
    timeout: float = 30.0
    enabled: bool = True
    trust_article_html: bool = False
    redirects: bool = True
    full_sync_interval: int = 86400
    optimize_images: bool = False

    def __post_init__(self) -> None:
        hold(self.client_secret)  # masked in every message, whatever a service repeats back

    @classmethod
    def from_config(cls, config: BlogServiceConfig, config_file_path: str | os.PathLike[str] | None) -> Settings:
        """Resolve `config` for a site whose mkdocs.yml is `config_file_path` (None: the cwd)."""
        root = Path(config_file_path).resolve().parent if config_file_path else Path.cwd()
        base_url = _base_url(config.base_url)
        blog_dir = _site_path("blog_dir", config.blog_dir)
        posts_dir = _site_path("posts_dir", config.posts_dir or f"{blog_dir}/posts")
        _check_range(
            "sync_interval", config.sync_interval, 0, ONE_DAY, "0 turns the background sync of `mkdocs serve` off"
        )
        _check_range(
            "full_sync_interval", config.full_sync_interval, 0, ONE_YEAR, "0 asks for every article at every build"
        )
        _check_range("timeout", config.timeout, 0, ONE_DAY, "default 30", above_minimum=True)
        _check_range("redirect_port", config.redirect_port, 0, 65535, "0: any free port", unit="")
        scope = " ".join(config.scope.split())
        if "articles:read" not in scope.split():
            raise ConfigurationError(
                f"scope must include articles:read (the plugin reads the articles with it), not {config.scope!r}: "
                f"fix it in mkdocs.yml (default {DEFAULT_SCOPE!r})"
            )
        return cls(
            base_url=base_url,
            client_id=config.client_id or os.environ.get(ENV_CLIENT_ID) or None,
            client_secret=config.client_secret or os.environ.get(ENV_CLIENT_SECRET) or None,
            scope=scope,
            redirect_port=config.redirect_port,
            credentials_file=root / config.credentials_file,
            blog_dir=blog_dir,
            posts_dir=posts_dir,
            cache_dir=root / config.cache_dir,
            download_images=config.download_images,
            page_template=Path(config.page_template) if config.page_template else None,
            head_template=Path(config.head_template) if config.head_template else None,
            offline=config.offline,
            on_error=config.on_error,
            on_missing_credentials=config.on_missing_credentials,
            sync_interval=config.sync_interval,
            timeout=float(config.timeout),
            enabled=config.enabled,
            trust_article_html=config.trust_article_html,
            redirects=config.redirects,
            full_sync_interval=config.full_sync_interval,
            optimize_images=config.optimize_images,
        )

    def require_client_id(self) -> str:
        """The client id; `ConfigurationError` saying where to set it when it is missing."""
        if not self.client_id:
            raise ConfigurationError(
                f"client_id is not set: add `client_id` to the plugin's settings in mkdocs.yml or set {ENV_CLIENT_ID}"
            )
        return self.client_id

    def check_outside_docs(self, docs_dir: Path) -> None:
        """Refuse a cache or credentials file inside docs_dir (and a cache_dir holding docs_dir).

        Whatever is in docs_dir is published with the site (a credentials file would be served to
        anyone), and each write there (a page rendered, a token refreshed) makes `mkdocs serve`
        rebuild in a loop.
        """
        docs_dir = docs_dir.resolve()
        cache_dir = self.cache_dir.resolve()
        if cache_dir == docs_dir or docs_dir in cache_dir.parents:
            raise ConfigurationError(
                f"cache_dir ({self.cache_dir}) is inside docs_dir; writing there would make "
                "`mkdocs serve` rebuild in a loop: use a folder outside docs_dir (default .cache/blogsvc)"
            )
        if cache_dir in docs_dir.parents:
            raise ConfigurationError(
                f"cache_dir ({self.cache_dir}) contains docs_dir; the cache would write into "
                "docs_dir: use a folder of its own outside docs_dir (default .cache/blogsvc)"
            )
        credentials_file = self.credentials_file.resolve()
        if docs_dir in credentials_file.parents:
            raise ConfigurationError(
                f"credentials_file ({self.credentials_file}) is inside docs_dir; it would be "
                "published with the site, and each token refresh would make `mkdocs serve` rebuild: "
                "use a path outside docs_dir (default .blogsvc/credentials.json), then run `mkdocs-blogsvc login`"
            )


#: Settings two instances must never share (each instance is one connected blog).
EXCLUSIVE = ("cache_dir", "credentials_file", "posts_dir")


def check_exclusive(settings: Settings, others: list[Settings]) -> None:
    """Refuse two instances of the plugin in one site sharing a cache, a store or posts_dir."""
    for other in others:
        for name in EXCLUSIVE:
            if getattr(other, name) == getattr(settings, name):
                raise ConfigurationError(
                    f"two instances of the plugin share {name} ({getattr(settings, name)}); "
                    f"give each connected blog its own {name}"
                )


def _check_range(
    name: str, value: float, low: int, high: int, hint: str, *, above_minimum: bool = False, unit: str = " seconds"
) -> None:
    """Refuse a number outside its range in one line (a huge one would otherwise fail deep
    inside a socket or a timer, with a traceback), and a yes or no: YAML's `true` is the
    integer 1 to Python, so `timeout: yes` would be a one-second deadline."""
    lowest = f"more than {low}" if above_minimum else f"{low} or more"
    if isinstance(value, bool):
        raise ConfigurationError(
            f"{name} must be a number ({lowest} and at most {high}{unit}), not {value}: fix it in mkdocs.yml ({hint})"
        )
    if low < value <= high or (value == low and not above_minimum):
        return
    raise ConfigurationError(
        f"{name} must be {lowest} and at most {high}{unit}, not {value}: fix it in mkdocs.yml ({hint})"
    )


def _base_url(value: str) -> str:
    """`value` without a trailing slash, once it is an http(s) URL with a host and a valid port.

    Checked here so that a typo stops the build at once with the setting named, instead of
    surfacing later as a failed request."""
    base_url = value.strip()
    if not base_url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"base_url must start with http:// or https://, not {value!r}: set it in mkdocs.yml to the "
            "service's address, such as https://blogs.example.com"
        )
    try:
        parts = urlsplit(base_url)
        host, _port = parts.hostname, parts.port  # `port` raises ValueError unless 0 to 65535
    except ValueError as exc:
        raise ConfigurationError(
            f"base_url {value!r} is not a valid URL ({exc}): set it in mkdocs.yml to the service's "
            "address, such as https://blogs.example.com"
        ) from None
    if not host:
        raise ConfigurationError(
            f"base_url {value!r} has no host name: set it in mkdocs.yml to the service's address, "
            "such as https://blogs.example.com"
        )
    if parts.query or parts.fragment or " " in base_url or not base_url.isprintable():
        raise ConfigurationError(
            f"base_url {value!r} must be the service's address only "
            "(no spaces or control characters, no query or fragment), such as https://blogs.example.com"
        )
    return base_url.rstrip("/")


def _site_path(name: str, value: str) -> str:
    """A folder inside docs_dir, as a clean relative POSIX path (no `..`, not absolute)."""
    cleaned = posixpath.normpath(value.replace("\\", "/")).strip("/")
    if not cleaned or cleaned == "." or cleaned.split("/")[0] == ".." or value.startswith("/"):
        raise ConfigurationError(
            f"{name} must be a folder inside docs_dir, not {value!r}: give a relative folder such as blog"
        )
    return cleaned


@dataclass(frozen=True)
class Site:
    """What the CLI needs of a site: its blogsvc instances and the settings of mkdocs.yml
    that the pages of an export depend on."""

    instances: list[Settings]
    site_url: str | None
    #: `theme.custom_dir`, absolute (None when not set).
    custom_dir: Path | None
    #: The folder of mkdocs.yml (relative paths in it start there) and `docs_dir`, absolute.
    config_dir: Path
    docs_dir: Path
    #: Where the generator puts article pages (`redirects.post_urls`): the settings of each
    #: enabled Material blog plugin, `use_directory_urls` and the theme's language.
    blogs: tuple[dict[str, Any], ...] = ()
    use_directory_urls: bool = True
    language: str | None = None
    #: Whether `markdown_extensions` has attr_list: exported pages then carry image sizes.
    attr_list: bool = False


def load_site_settings(config_file: str | None) -> list[Settings]:
    """The resolved settings of every `blogsvc` instance of a site (for the CLI)."""
    return load_site(config_file).instances


#: Where a command looks for the site's configuration without `-f`: MkDocs' names, then
#: ProperDocs' (whose builds ask to rename mkdocs.yml to properdocs.yml).
DEFAULT_CONFIG_FILES = ("mkdocs.yml", "mkdocs.yaml", "properdocs.yml", "properdocs.yaml")


def _default_config_file() -> str:
    for name in DEFAULT_CONFIG_FILES:
        if Path(name).is_file():
            return name
    raise ConfigurationError(
        f"no {DEFAULT_CONFIG_FILES[0]} (nor {', '.join(DEFAULT_CONFIG_FILES[1:])}) in {Path.cwd()}: run the command from the site's "
        "folder, or pass -f path/to/mkdocs.yml"
    )


def load_site(config_file: str | None) -> Site:
    """The site of `config_file` with the resolved settings of every `blogsvc` instance.

    An instance counts whether it is enabled or not (`enabled: false`): a site built without
    the plugin (Zensical, `mkdocs-blogsvc export`) keeps its settings there. `config_file` None
    means the first of `DEFAULT_CONFIG_FILES` in the current folder. MkDocs loads
    and validates the whole file (plugins included), so an error here is what `mkdocs build`
    would report; it is raised as one `ConfigurationError` naming the file.
    """
    import logging

    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    if config_file is None:
        config_file = _default_config_file()
    shown = config_file
    problems: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.ERROR:
                problems.append(record.getMessage())

    collector, mkdocs_log = Collect(), logging.getLogger("mkdocs.config")
    mkdocs_log.addHandler(collector)
    try:
        site = load_config(config_file)
    except MkDocsException as exc:
        detail = "; ".join(problems) or exc.format_message()
        detail = " ".join(detail.split())  # YAML's messages run over several lines: the error is one
        raise ConfigurationError(f"cannot load {shown}: {detail}") from None
    finally:
        mkdocs_log.removeHandler(collector)
    instances = [
        Settings.from_config(plugin.config, site.config_file_path)
        for plugin in site.plugins.values()
        if isinstance(getattr(plugin, "config", None), BlogServiceConfig)
    ]
    for settings in instances:  # what a build would refuse, `login` must not write either
        settings.check_outside_docs(Path(site.docs_dir))
    if not instances:
        raise ConfigurationError(
            f"no blogsvc plugin in {site.config_file_path or shown}: add `- blogsvc` under `plugins:` "
            "(for builds without the plugin, such as Zensical's, keep it there with `enabled: false`)"
        )
    custom_dir = getattr(site.theme, "custom_dir", None)
    config_dir = Path(site.config_file_path).resolve().parent if site.config_file_path else Path.cwd()
    blogs = tuple(
        {key: plugin.config.get(key) for key in ("blog_dir", "post_dir", "post_url_format", "post_url_date_format")}
        for plugin in site.plugins.values()
        if type(plugin).__module__.startswith("material.plugins.blog") and plugin.config.get("enabled", True)
    )
    language = site.theme.get("language") if hasattr(site.theme, "get") else None
    attr_list = any(str(name) in ("attr_list", "markdown.extensions.attr_list") for name in site.markdown_extensions)
    return Site(
        instances,
        site.site_url or None,
        Path(custom_dir).resolve() if custom_dir else None,
        config_dir,
        Path(site.docs_dir).resolve(),
        blogs,
        bool(site.use_directory_urls),
        language if isinstance(language, str) else None,
        attr_list,
    )
