"""Release readiness: what a user installs is what the release workflow would publish.

The slow test builds the sdist and the wheel (`python -m build`, as the release workflow does),
checks them with `twine check`, installs the wheel (not editable, with `[demo]`) into a fresh
environment, and from an empty folder runs the demo and one real build of a site that `new`
wrote: missing package data (the example site, the templates, the sample media) fails here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from mkdocs_blogsvc import __version__

REPO = Path(__file__).resolve().parents[2]


def test_the_changelog_keeps_a_changelog_and_names_the_version() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "[Keep a Changelog](https://keepachangelog.com/" in text
    sections = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.MULTILINE)
    assert sections[0] == ("Unreleased", "")
    assert sections[1][0] == __version__ and sections[1][1], "the newest release is the package's version"
    for version, _ in sections:  # each section has its link at the bottom
        assert re.search(rf"^\[{re.escape(version)}\]: https://", text, re.MULTILINE), version
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'version = { attr = "mkdocs_blogsvc.__version__" }' in pyproject


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_built_wheel_installed_in_a_fresh_environment_runs_the_demo_and_a_build(tmp_path: Path) -> None:
    # no trace of this checkout in the environment of the commands
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["NO_MKDOCS_2_WARNING"] = "1"
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], tmp_path, env)
    (wheel,) = dist.glob("mkdocs_blogsvc-*.whl")
    (sdist,) = dist.glob("mkdocs_blogsvc-*.tar.gz")
    assert wheel.name.startswith(f"mkdocs_blogsvc-{__version__}-")
    run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], tmp_path, env)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for needed in (
        "mkdocs_blogsvc/example_site/mkdocs.yml",
        "mkdocs_blogsvc/example_site/docs/index.md",
        "mkdocs_blogsvc/example_site/templates/article.md.j2",
        "mkdocs_blogsvc/templates/scaffold/mkdocs.yml",
        "mkdocs_blogsvc/templates/theme/main.html",
        "mkdocs_blogsvc/server/sample_media/cover-05.png",
    ):
        assert needed in names, needed
    assert not [name for name in names if "/site/" in name or "/.cache/" in name or "/.blogsvc/" in name]

    environment = tmp_path / "env"
    # Without pip of its own (installing pip into it, and compiling pip, took 6 s of CPU): this
    # environment's pip installs into it (`--python`), and the fresh environment holds only the
    # wheel and what its `[demo]` requirements pull in.
    venv.create(environment, with_pip=False)
    bin_dir = environment / "bin"
    # --no-compile: no bytecode compiled up front for every module of every dependency;
    # what the demo and the build import is compiled as they import it.
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(bin_dir / "python"),
            "install",
            "--quiet",
            "--no-compile",
            f"{wheel}[demo]",
        ],
        tmp_path,
        env,
        timeout=900,
    )
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    where = run([str(bin_dir / "python"), "-c", "import mkdocs_blogsvc; print(mkdocs_blogsvc.__file__)"], tmp_path, env)
    assert where.stdout.strip().startswith(str(environment)), "the wheel, not this checkout, is imported"

    empty = tmp_path / "empty"
    empty.mkdir()
    demo = run([str(bin_dir / "mkdocs-blogsvc"), "demo"], empty, env)
    assert "Wrote the example site into blogsvc-demo/" in demo.stdout
    assert re.search(r"blogsvc: 12 new, 0 updated, 0 deleted, 0 unchanged", demo.stdout), demo.stdout
    assert "blogsvc: 1 new, 1 updated, 1 deleted, 10 unchanged" in demo.stdout
    built = empty / "blogsvc-demo" / "site"
    assert (built / "index.html").is_file() and (built / "blog" / "index.html").is_file()
    assert list(built.glob("blog/*/index.html")), "the blog's articles are built"

    run(
        [
            str(bin_dir / "mkdocs-blogsvc"),
            "new",
            "my-site",
            "--base-url",
            "http://127.0.0.1:9",
            "--client-id",
            "my-client",
        ],
        empty,
        env,
    )
    build = run([str(bin_dir / "mkdocs"), "build"], empty / "my-site", env)
    assert "blogsvc: no credentials for the blog at http://127.0.0.1:9" in build.stderr
    assert "Traceback" not in build.stderr and (empty / "my-site" / "site" / "index.html").is_file()
