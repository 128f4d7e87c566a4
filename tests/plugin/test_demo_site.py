"""Which site the demo builds: the one named, a clone's `example-site/`, or a copy of the
example site that ships with the package, written into a folder the demo names."""

from __future__ import annotations

from pathlib import Path

import pytest

from mkdocs_blogsvc import demo
from mkdocs_blogsvc.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[2]


def test_a_clone_builds_its_example_site(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert demo.choose_site(None, echo=lambda line: None) == Path("example-site") / "mkdocs.yml"


def test_elsewhere_the_packaged_site_is_written_into_a_named_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    config = demo.choose_site(None, Path("blogsvc-demo"), echo=said.append)
    assert config == Path("blogsvc-demo") / "mkdocs.yml" and config.is_file()
    assert said == ["Wrote the example site into blogsvc-demo/ (it ships with the package); the demo builds it there."]
    assert (tmp_path / "blogsvc-demo" / "docs" / "reference" / "commands.md").is_file()
    assert (tmp_path / "blogsvc-demo" / "templates" / "article.md.j2").is_file()
    assert not (tmp_path / "blogsvc-demo" / "site").exists()
    # a second run writes into its own copy again (a page edited there is put back)
    (tmp_path / "blogsvc-demo" / "docs" / "index.md").write_text("changed\n")
    assert demo.choose_site(None, Path("blogsvc-demo"), echo=said.append) == config
    assert (tmp_path / "blogsvc-demo" / "docs" / "index.md").read_text() != "changed\n"


def test_a_folder_that_is_not_the_demos_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blogsvc-demo").mkdir()
    (tmp_path / "blogsvc-demo" / "mine.txt").write_text("mine\n")
    with pytest.raises(ConfigurationError) as raised:
        demo.choose_site(None, Path("blogsvc-demo"), echo=lambda line: None)
    assert str(raised.value) == (
        "blogsvc-demo already exists and is not a copy of the example site that the demo "
        "wrote: pass --into DIR naming a new or empty folder"
    )
    assert sorted(p.name for p in (tmp_path / "blogsvc-demo").iterdir()) == ["mine.txt"]


def test_a_named_config_file_that_is_missing_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"not found: pass --config-file pointing at a site's mkdocs.yml"):
        demo.choose_site(tmp_path / "nope.yml")
