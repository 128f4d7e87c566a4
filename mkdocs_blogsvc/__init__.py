"""mkdocs-blogsvc: publish a blog hosted on the Blog Content Service as part of an MkDocs site."""

__version__ = "0.1.0"
