"""The `mkdocs-blogsvc` command. It only adapts: each command calls plain functions of the
package and turns `BlogServiceError` into a one-line message and exit status 1."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mkdocs_blogsvc import __version__
from mkdocs_blogsvc.errors import BlogServiceError

F = TypeVar("F", bound=Callable[..., Any])


def reports_errors(command: F) -> F:
    """Turn the package's errors into `click.ClickException` (message, exit status 1, no traceback)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except BlogServiceError as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mkdocs-blogsvc")
def main() -> None:
    """Publish a blog hosted on the Blog Content Service as part of an MkDocs site."""


# --- commands of the client side are added below this line ---------------------------------


# --- the reference service ------------------------------------------------------------------


class _LazyServerGroup(click.Group):
    """`mkdocs-blogsvc server ...`: loaded on use, so plugin users need no server dependencies."""

    def _real(self) -> click.Group:
        try:
            from mkdocs_blogsvc.server.cli import server
        except ImportError as exc:
            raise click.ClickException(
                f"The reference service needs the [server] extra ({exc.name} is missing): "
                "pip install 'mkdocs-blogsvc[server]'"
            ) from None
        return server

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self._real().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._real().get_command(ctx, name)


main.add_command(_LazyServerGroup("server", help="Run and script the reference Blog Content Service."))
