"""Every environment problem exits 2 with a clear message, as the README promises: one test per kind, each simulating
the missing piece (an extra, Chromium, Dynamo) by patching its probe. A missing piece is never exit 1 (a finding)."""

from __future__ import annotations

import pytest

from kvproof.report import EXIT_USAGE


def test_without_ray_the_ray_executor_is_an_environment_problem(kvproof_cli, monkeypatch):
    from kvproof.stateful_tests.harness import shards

    monkeypatch.setattr(shards, "ray_unavailable", lambda: "ray is not installed (pip install 'kvproof[ray]')")
    ran = kvproof_cli(
        "conform", "tree", "--target", "impl", "--oracle", "reference", "--streams", "2", "--processes", "2", "--executor", "ray"
    )
    assert ran.code == EXIT_USAGE and "ray is not installed (pip install 'kvproof[ray]')" in ran.out, ran.out
    assert "Traceback" not in ran.out


def test_without_mutmut_mutate_is_an_environment_problem(kvproof_cli, monkeypatch):
    from kvproof.stateful_tests.mutation import driver

    monkeypatch.setattr(driver, "mutmut_unavailable", lambda: "mutmut is not installed: pip install -e '.[mutate]'")
    ran = kvproof_cli("mutate", "--paths", "spec")
    assert ran.code == EXIT_USAGE and "kvproof mutate: mutmut is not installed" in ran.out, ran.out


def test_without_the_docs_extra_the_site_is_an_environment_problem(kvproof_cli, monkeypatch):
    from kvproof.docs_site import build

    monkeypatch.setattr(build, "missing_packages", lambda: ["sphinx", "myst_parser"])
    ran = kvproof_cli("docs")
    assert ran.code == EXIT_USAGE and "the docs extra is not installed" in ran.out and "sphinx, myst_parser" in ran.out


def test_without_chromium_the_browser_check_is_an_environment_problem(kvproof_cli, monkeypatch, tmp_path):
    from kvproof.docs_site import browser, build

    monkeypatch.setattr(build, "build_site", lambda out=None, doctest=True: build.SiteBuild(tmp_path, []))
    monkeypatch.setattr(browser, "unavailable", lambda: "no Chromium at /usr/bin/chromium: apt-get install -y chromium")
    ran = kvproof_cli("docs", "--check-browser", "--no-doctest")
    assert ran.code == EXIT_USAGE and "kvproof docs --check-browser: no Chromium at /usr/bin/chromium" in ran.out, ran.out


def test_without_dynamo_a_dynamo_target_is_an_environment_problem(kvproof_cli, monkeypatch):
    from kvproof.stateful_tests.harness import targets

    real = targets.load_target

    def no_dynamo(name, *args, **kwargs):
        if name.startswith("dynamo"):
            return targets.Target(name, None, "ai-dynamo-runtime is not installed (pip install -e '.[dynamo]')")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(targets, "load_target", no_dynamo)
    for args in (("check", "--target", "dynamo"), ("conform", "tree", "--streams", "1"), ("vectors", "--target", "dynamo")):
        ran = kvproof_cli(*args)
        assert ran.code == EXIT_USAGE and "ai-dynamo-runtime is not installed" in ran.out, (args, ran.out)


@pytest.mark.parametrize(
    "command, probe",
    [
        (("conform", "slot-tracker", "--scenarios", "1"), "kvproof.stateful_tests.sequences.oracle.oracle_unavailable"),
        (("conform", "selection", "--scenarios", "1"), "kvproof.stateful_tests.sequences.selection_oracle.unavailable"),
    ],
)
def test_without_dynamo_its_oracles_are_an_environment_problem(kvproof_cli, monkeypatch, command, probe):
    monkeypatch.setattr(probe, lambda: "ai-dynamo-runtime is not installed")
    ran = kvproof_cli(*command)
    assert ran.code == EXIT_USAGE and "unavailable: ai-dynamo-runtime is not installed" in ran.out, ran.out


def test_negative_control_a_room_failure_that_is_not_an_environment_problem_stays_exit_1(kvproof_cli, monkeypatch):
    """A shard whose process died is a failed run (exit 1), not exit 2: the mapping does not swallow every error."""
    from kvproof.stateful_tests.harness import shards
    from kvproof.stateful_tests.tree import conformance

    def died(*args, **kwargs):
        raise shards.ShardError("a shard's process died before it reported (killed); rerun that shard alone with --shard")

    monkeypatch.setattr(conformance, "conform_sharded", died)
    ran = kvproof_cli("conform", "tree", "--target", "impl", "--oracle", "reference", "--streams", "2", "--processes", "2")
    assert ran.code == 1 and "a shard's process died" in ran.out
