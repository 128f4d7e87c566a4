"""The plugin's settings: `base_url` is checked when the site is loaded, so a typo stops with the
setting named instead of a traceback from the HTTP library at the first request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mkdocs_blogsvc import config, errors
from mkdocs_blogsvc.cli import main


def resolve(**options: Any) -> config.Settings:
    plugin_config = config.BlogServiceConfig()
    plugin_config.load_dict({"client_id": "client-1", **options})
    failed, _warnings = plugin_config.validate()
    assert not failed
    return config.Settings.from_config(plugin_config, None)


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("https://blog.example.com", "https://blog.example.com"),
        ("https://example.com/blogsvc/", "https://example.com/blogsvc"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_valid_base_urls_lose_their_trailing_slash(base_url: str, expected: str) -> None:
    assert resolve(base_url=base_url).base_url == expected


@pytest.mark.parametrize(
    ("base_url", "fragment"),
    [
        ("ftp://example.com", "must start with http:// or https://"),
        ("example.com", "must start with http:// or https://"),
        ("http://host:abc", "not a valid URL (Port could not be cast to integer value as 'abc')"),
        ("http://host:99999", "not a valid URL (Port out of range 0-65535)"),
        ("http://[::1:8000", "not a valid URL (Invalid IPv6 URL)"),
        ("http://", "has no host name"),
        ("http://:8000", "has no host name"),
        ("http://host/?blog=1", "no query or fragment"),
        ("http://my host", "no spaces"),
        ("http://host\t/x", "control characters"),
    ],
)
def test_a_broken_base_url_is_a_configuration_error_naming_it(base_url: str, fragment: str) -> None:
    with pytest.raises(errors.ConfigurationError) as caught:
        resolve(base_url=base_url)
    message = str(caught.value)
    assert message.startswith("base_url") and fragment in message and repr(base_url) in message


def test_the_cli_reports_a_broken_base_url_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Test\nplugins:\n  - blogsvc:\n      base_url: http://host:abc\n      client_id: c\n"
    )
    result = CliRunner().invoke(main, ["status", "-f", str(tmp_path / "mkdocs.yml")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    expected = (
        "Error: base_url 'http://host:abc' is not a valid URL "
        "(Port could not be cast to integer value as 'abc'): set it in mkdocs.yml to the service's "
        "address, such as https://blogs.example.com"
    )
    assert result.output.strip().splitlines() == [expected]


def test_a_missing_client_id_says_where_to_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.ENV_CLIENT_ID, raising=False)
    with pytest.raises(errors.ConfigurationError, match="add `client_id`.*or set BLOGSVC_CLIENT_ID"):
        resolve(client_id=None).require_client_id()
    monkeypatch.setenv(config.ENV_CLIENT_ID, "from-the-environment")
    assert resolve(client_id=None).require_client_id() == "from-the-environment"


# --- found by mutation testing -------------------------------------------------------------------


def test_durations_at_their_upper_bound_are_accepted() -> None:
    settings = resolve(
        sync_interval=config.ONE_DAY, timeout=config.ONE_DAY, full_sync_interval=config.ONE_YEAR, redirect_port=65535
    )
    assert (settings.sync_interval, settings.timeout, settings.full_sync_interval) == (86400, 86400.0, 31536000)


@pytest.mark.parametrize("setting", ["sync_interval", "timeout", "full_sync_interval", "redirect_port"])
def test_a_yes_or_no_for_a_number_is_refused_in_one_line(setting: str) -> None:
    """Found by mutation testing: YAML's `true` is an int to Python, so `timeout: yes` was a
    1-second deadline and `sync_interval: true` a sync every second."""
    with pytest.raises(errors.ConfigurationError) as caught:
        resolve(**{setting: True})
    message = str(caught.value)
    assert message.startswith(f"{setting} must be a number") and "not True: fix it in mkdocs.yml" in message
    assert "\n" not in message


@pytest.mark.parametrize("scope", ["articles:readonly", "blog:read", "articles:read-all blog:read"])
def test_the_scope_must_name_articles_read_itself(scope: str) -> None:
    with pytest.raises(errors.ConfigurationError, match=f"^scope must include articles:read .*not {scope!r}"):
        resolve(scope=scope)


def test_the_scope_is_written_with_single_spaces() -> None:
    assert resolve(scope="  articles:read \n\t blog:read ").scope == "articles:read blog:read"


@pytest.mark.parametrize("setting", ["blog_dir", "posts_dir"])
@pytest.mark.parametrize("value", ["/blog", ".", "./", "../blog", "blog/../../x"])
def test_site_folders_must_be_inside_docs_dir(setting: str, value: str) -> None:
    with pytest.raises(errors.ConfigurationError) as caught:
        resolve(**{setting: value})
    assert str(caught.value) == (
        f"{setting} must be a folder inside docs_dir, not {value!r}: give a relative folder such as blog"
    )


def test_site_folders_are_clean_posix_paths() -> None:
    settings = resolve(blog_dir="news\\2024/", posts_dir="./news//posts/")
    assert (settings.blog_dir, settings.posts_dir) == ("news/2024", "news/posts")
    assert resolve(blog_dir="news/").posts_dir == "news/posts"
    assert resolve(blog_dir="..notes", posts_dir="..notes/..posts").posts_dir == "..notes/..posts", "names, not `..`"


@pytest.mark.parametrize(("base_url", "fragment"), [("http://host/#x", "no query or fragment")])
def test_a_base_url_with_a_fragment_is_refused(base_url: str, fragment: str) -> None:
    with pytest.raises(errors.ConfigurationError, match=fragment):
        resolve(base_url=base_url)


def test_a_base_url_with_spaces_around_is_trimmed() -> None:
    assert resolve(base_url="  https://blog.example.com/ ").base_url == "https://blog.example.com"


def test_the_client_secret_comes_from_the_environment_and_never_shows_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.ENV_CLIENT_SECRET, "env-secret-value")
    settings = resolve()
    assert settings.client_secret == "env-secret-value" and "env-secret-value" not in repr(settings)
    assert "yaml-secret-value" not in repr(resolve(client_secret="yaml-secret-value"))


@pytest.mark.parametrize("setting", ["cache_dir", "credentials_file"])
@pytest.mark.parametrize("value", ["docs", "link/inside", "docs/../docs/x"])
def test_plugin_files_in_docs_dir_are_refused_however_the_path_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, value: str
) -> None:
    """Through a symbolic link to docs_dir, or `..`: the check compares resolved paths."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    settings = resolve(**{setting: value})
    if setting == "credentials_file" and value == "docs":
        return  # docs_dir itself as a file name: not inside it
    with pytest.raises(errors.ConfigurationError, match=f"^{setting} .* docs_dir"):
        settings.check_outside_docs(tmp_path / "docs")
