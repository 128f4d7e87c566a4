"""The package's one logger, `mkdocs.plugins.blogsvc`, made the MkDocs way (`get_plugin_logger`):
every line reads "blogsvc: ..." in MkDocs' output, and `mkdocs build --strict` counts its
warnings. The sync, the cache and the CLI log through it too (the CLI shows its warnings on
stderr)."""

from __future__ import annotations

from mkdocs.plugins import get_plugin_logger

#: The plugin's public name: the prefix of every line and the end of the logger's name.
log = get_plugin_logger("blogsvc")
