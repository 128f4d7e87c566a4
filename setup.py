"""Ships the example site inside the wheel, so that `mkdocs-blogsvc demo` runs without a clone.

The example site lives at the top of the repository (`example-site/`, also the documentation);
it is copied into the built package as `mkdocs_blogsvc/example_site/` (and into the sdist through
MANIFEST.in). An editable install skips the copy: the demo then finds `example-site/` beside
the package, as in a clone. Everything else is configured in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: What the demo needs of the example site; builds, caches and credentials never ship.
EXAMPLE_PARTS = ("mkdocs.yml", "docs", "templates")
EXAMPLE_LEFT_OUT = shutil.ignore_patterns("site", ".cache", ".blogsvc", "__pycache__", "*.pyc")


class BuildWithExampleSite(build_py):
    """`build_py`, then the example site copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        source = HERE / "example-site"
        target = Path(self.build_lib) / "mkdocs_blogsvc" / "example_site"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for part in EXAMPLE_PARTS:
            path = source / part
            if path.is_dir():
                shutil.copytree(path, target / part, ignore=EXAMPLE_LEFT_OUT)
            else:
                shutil.copy2(path, target / part)


setup(cmdclass={"build_py": BuildWithExampleSite})
