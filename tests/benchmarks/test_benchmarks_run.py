"""The benchmark scripts still run against the plugin as it is (they reach into its hooks and
its sync; a change there once broke `bench_plugin_share` unnoticed). Tiny sizes, one run each;
what is checked is what the benchmarks claim to measure, never a time."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.benchmarks import bench_build, bench_plugin_share

pytestmark = pytest.mark.slow


def test_plugin_share_builds_cold_then_with_nothing_changed(tmp_path: Path) -> None:
    full, empty, status = bench_plugin_share.answers(12)
    config, plugin = bench_plugin_share.site(tmp_path)
    cold = bench_plugin_share.build_share(config, plugin, full, status)
    assert plugin.last_report is not None and len(plugin.last_report.new) == 12
    pages = sorted(p.name for p in (Path(config.site_dir) / "blog" / "posts").glob("*/index.html"))
    assert len(pages) == 12

    config, plugin = bench_plugin_share.site(tmp_path)  # the next build, as a new process would
    unchanged = bench_plugin_share.build_share(config, plugin, empty, status)
    report = plugin.last_report
    assert report is not None and not report.changed and report.unchanged == 12
    assert unchanged.registered == 12  # every article page registered from the cache
    for phases in (cold, unchanged):  # each phase was reached and timed (the sync's end included)
        assert min(phases.sync, phases.files, phases.pages, phases.finish) > 0
        assert phases.cpu > 0

    # What `--instructions` runs under callgrind: the same build, each hook inside starmap's `next`.
    config, plugin = bench_plugin_share.site(tmp_path)
    bench_plugin_share.counted_hooks(plugin)
    counted = bench_plugin_share.build_share(config, plugin, empty, status)
    assert counted.registered == 12 and plugin.last_report is not None and plugin.last_report.unchanged == 12

    # What `--floor` compares with, over the same cache: its own checks fail if what it reads
    # (the stats, the pack's places) is not what the cache holds.
    assert bench_plugin_share.floor_steps(config, plugin)() == 12
    plugin_cpu, floor_cpu = bench_plugin_share.measure_floor(3, runs=1)
    assert plugin_cpu > floor_cpu > 0


def test_busy_loops_burn_cpu_during_the_block_and_are_gone_after() -> None:
    before = os.times().children_user  # CPU of reaped children
    with bench_plugin_share.busy_loops(2) as loops:
        time.sleep(0.5)
        assert len(loops) == 2 and all(loop.poll() is None for loop in loops)
    assert all(loop.returncode is not None for loop in loops)  # killed and reaped
    assert os.times().children_user - before > 0.1  # more than starting Python twice: they looped


def test_counted_hooks_pass_arguments_and_results_through() -> None:
    hooks = SimpleNamespace(**{name: lambda *a, _n=name, **k: (_n, a, k) for name in bench_plugin_share.HOOKS})
    bench_plugin_share.counted_hooks(hooks)  # type: ignore[arg-type]
    for name in bench_plugin_share.HOOKS:
        assert getattr(hooks, name)("html", page=1) == (name, ("html",), {"page": 1})
        assert getattr(hooks, name).__name__ == "counted"


def test_bench_build_measures_both_sites_and_reports_the_interval(tmp_path: Path) -> None:
    args = argparse.Namespace(
        cover_every=3,
        cold_runs=1,
        runs=1,
        changed=2,
        own_runs=1,
        imported=False,
        control=False,
        instructions=False,
        profile=None,
        profile_runs=1,
        spec_literal=True,
    )
    result = bench_build.measure(tmp_path, "material", 6, args)
    assert result.refused_coded == 0  # served as a spec-literal service: every body was plain
    # The plain site holds the very pages the plugin added, and both built.
    plain_posts = sorted(p.name for p in (tmp_path / "plain" / "docs" / "blog" / "posts").rglob("*.md"))
    assert len(plain_posts) == 6
    assert len(result.no_change.plugin) == len(result.no_change.plain) == 1
    assert result.no_change_bytes == [74]  # {"new":[],"updated":[],"deleted":[],"syncedAt":"..."}
    assert 0 < result.incremental_bytes[0] < result.listing_bytes
    assert {"import", "pre_build", "page_content", "post_page"} <= set(result.own[0].own)
    report = result.report()
    assert "| no change |" in report
    assert "No-change ratio" in report and "no 95 % interval (too few pairs)" in report
