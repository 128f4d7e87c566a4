"""`python -m mkdocs_blogsvc` runs the `mkdocs-blogsvc` command."""

from mkdocs_blogsvc.cli import main

main()
