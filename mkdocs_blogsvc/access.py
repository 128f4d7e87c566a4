"""What a build does when it cannot get the blog: on a machine that has no credentials for it
at all (`on_missing_credentials`), and when the sync fails (`on_error`).

A site using the plugin is built by more people than its owner: a contributor who cloned the
docs to fix a typo, a pull request from a fork (CI gives it no secrets). They have no
credentials file and no `BLOGSVC_REFRESH_TOKEN`, and stopping their build would keep them from
previewing anything. So, by default (`on_missing_credentials: auto`):

- on a person's machine the build goes on with one warning: the blog's articles are left out
  (or come from the cache, when an earlier sync left one) and `mkdocs-blogsvc login` is the way
  in. `mkdocs build --strict` still fails, as for every warning;
- in CI (`CI` set to a true value, as GitHub Actions, GitLab CI, CircleCI, Travis, Woodpecker
  and most others do) the build stops, so a publishing job whose secret is missing never deploys
  the site without its blog.

`warn` and `fail` choose one behaviour everywhere (a fork preview job sets `warn`). Credentials
that exist but are dead (rotated, revoked, expired) are not "missing": they always stop the build,
because only the owner can mend them. No network and no file content is involved here: the
question is only whether anything to authenticate with exists.

A sync that fails (the service down or misbehaving) is a passing outage: by default
(`on_error: auto`) the build goes on from the cache with one warning. Except in CI with nothing
cached (every fresh runner, unless the job restores `.cache/`): that build would publish the
site without its blog, so it stops, for the same reason as above.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from mkdocs_blogsvc import config, errors
from mkdocs_blogsvc.shared import counted

CHOICES = ("auto", "warn", "fail")
#: `CI` values that mean "not CI" (anything else non-empty means CI: some services set a name).
_NOT_CI = frozenset({"", "0", "false", "no", "off"})


def ci_value(environ: Mapping[str, str] = os.environ) -> str | None:
    """The `CI` environment variable when it says this is a CI run, else None."""
    value = environ.get("CI", "").strip()
    return None if value.lower() in _NOT_CI else value


def has_credentials(settings: config.Settings, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this machine has anything to authenticate with: the credentials file (even a
    broken or dead one: that is for the token manager to report) or `BLOGSVC_REFRESH_TOKEN`."""
    if environ.get(config.ENV_REFRESH_TOKEN, "").strip():
        return True
    path = settings.credentials_file
    try:
        path.stat()
    except FileNotFoundError:
        return False
    except OSError as exc:  # an unreadable folder, a file where the folder should be: one line, no traceback
        from mkdocs_blogsvc.credentials import folder_problem

        raise errors.CredentialsError(f"{folder_problem('read', path, path.parent, exc)}") from None
    return True


def policy(settings: config.Settings, environ: Mapping[str, str] = os.environ) -> str:
    """`warn` or `fail`: what `on_missing_credentials` means on this machine."""
    if settings.on_missing_credentials != "auto":
        return settings.on_missing_credentials
    return "fail" if ci_value(environ) is not None else "warn"


def _missing(settings: config.Settings) -> str:
    return (
        f"no credentials for the blog at {settings.base_url} (no {settings.credentials_file} "
        f"and {config.ENV_REFRESH_TOKEN} is not set)"
    )


def build_without(settings: config.Settings, cached_articles: int, environ: Mapping[str, str] = os.environ) -> str:
    """The warning for a build that goes on without credentials; `errors.NotLoggedIn` (one
    line) when `on_missing_credentials` says this build must stop instead."""
    if policy(settings, environ) == "fail":
        ci = ci_value(environ)
        # the cache a CI job may restore (.cache/) would publish articles no build can update
        published = (
            f"with the {counted(cached_articles, 'article')} of a cache it cannot sync"
            if cached_articles
            else "without its articles"
        )
        why = (
            f"and CI={ci} stops the build rather than publish the site {published}"
            if settings.on_missing_credentials == "auto" and ci is not None
            else "and on_missing_credentials is fail"
        )
        raise errors.NotLoggedIn(
            f"{_missing(settings)}, {why}: run `mkdocs-blogsvc login`, or in CI give the job the "
            f"{config.ENV_REFRESH_TOKEN} secret or restore the credentials file (see the CI recipe); set "
            "`on_missing_credentials: warn` in mkdocs.yml for builds that may leave the blog out (pull-request previews)"
        )
    if cached_articles:  # they are in the site: what may be wrong is their age
        return (
            f"{_missing(settings)}, so the blog was not synced: this build has the {counted(cached_articles, 'article')} "
            "of an earlier sync, from the cache, as of that sync; to bring them up to date, run "
            "`mkdocs-blogsvc login` if you have an account for this blog, or ask the site owner for access"
        )
    return (
        f"{_missing(settings)}, so the blog's articles are left out of this build; to include them, run "
        "`mkdocs-blogsvc login` if you have an account for this blog, or ask the site owner for access"
    )


def sync_failure_stops(
    settings: config.Settings, ever_synced: bool, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Why a build whose sync failed must stop (`on_error`), as the end of its message; None
    when it goes on from the cache with a warning. `ever_synced`: the cache holds a sync (of a
    blog with articles or without), so building from it leaves nothing out."""
    if settings.on_error == "fail":
        return "on_error is fail"
    ci = ci_value(environ)
    if settings.on_error == "auto" and not ever_synced and ci is not None:
        return (
            f"the cache holds no article, and CI={ci} stops the build rather than publish the site "
            "without its blog (set on_error: warn to build it anyway)"
        )
    return None
