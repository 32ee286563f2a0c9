"""No tracker outlives the harness, whatever way it ends; the bind notice and ``--netns``.

The leftover check looks at the one process group the child leads (``/proc/*/stat``), never
at process names. Its negative controls show it does see a survivor: a child started without
the guard (its own session, no parent-death signal) outlives a SIGKILLed parent, and the
detector reports it until the test kills it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kvproof.stateful_tests.harness import process_guard
from kvproof.stateful_tests.harness.process_guard import alive_in_group, children_of, is_alive

DRIVER = """
import subprocess, sys, time
from kvproof.stateful_tests.harness import process_guard
if sys.argv[1] == "guarded":
    child = process_guard.spawn_guarded(["sleep", "60"])
else:
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


def _gone(pgid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive_in_group(pgid):
            return True
        time.sleep(0.05)
    return False


def _driver(mode: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, mode], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def test_the_detector_sees_a_detached_sleeper_until_it_is_killed():
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert alive_in_group(sleeper.pid) == [sleeper.pid] and is_alive(sleeper.pid)
    finally:
        os.killpg(sleeper.pid, signal.SIGKILL)
        sleeper.wait(5)
    assert alive_in_group(sleeper.pid) == [] and not is_alive(sleeper.pid)


def test_killing_a_guarded_child_kills_its_whole_group():
    proc = process_guard.spawn_guarded(["sh", "-c", "sleep 60 & sleep 60 & wait"])
    deadline = time.monotonic() + 5
    while len(alive_in_group(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(alive_in_group(proc.pid)) == 3  # sh and its two sleepers, one group
    process_guard.GUARD.kill(proc)
    assert _gone(proc.pid) and proc.pid not in process_guard.GUARD.live()


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_guarded_child_dies_with_its_parent(how):
    driver, child = _driver("guarded")
    assert alive_in_group(child) == [child]
    driver.send_signal(how)
    driver.wait(10)
    assert _gone(child), f"child {child} outlived its parent ({how.name}): {alive_in_group(child)}"
    if how == signal.SIGTERM:
        assert driver.returncode == -signal.SIGTERM  # the handler killed the group, then died of the signal


def test_control_an_unguarded_child_outlives_a_killed_parent_and_the_check_sees_it():
    driver, child = _driver("plain")
    try:
        driver.kill()
        driver.wait(10)
        time.sleep(0.3)
        assert alive_in_group(child) == [child]  # the leftover the guarded test must not have
    finally:
        os.killpg(child, signal.SIGKILL)
    assert _gone(child)


def test_the_listening_address_reader_tells_loopback_from_every_interface():
    import socket

    with socket.socket() as lo, socket.socket() as every:
        lo.bind(("127.0.0.1", 0))
        lo.listen()
        every.bind(("0.0.0.0", 0))
        every.listen()
        assert process_guard.listening_addresses(lo.getsockname()[1]) == ["127.0.0.1"]
        assert process_guard.listening_addresses(every.getsockname()[1]) == ["0.0.0.0"]
    assert not process_guard.binds_all_interfaces(["127.0.0.1"])
    assert process_guard.binds_all_interfaces(["0.0.0.0"]) and process_guard.binds_all_interfaces(["0000:" * 7 + "0000"])


def test_netns_detection_answers_a_reason_or_none():
    reason = process_guard.netns_unavailable()
    assert reason is None or ("unshare" in reason or "not installed" in reason)


# ----------------------------------------------------------------------------- the real tracker


def _tracker_child(pid: int, within: float = 30.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for child in children_of(pid):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    if b"dynamo.slot_tracker" in f.read():
                        return child
            except FileNotFoundError:
                continue
        time.sleep(0.05)
    raise AssertionError(f"kvproof {pid} started no slot tracker")


@pytest.mark.dynamo
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_conform_run_leaves_no_slot_tracker(slot_tracker_oracle, how):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    run = subprocess.Popen(
        [sys.executable, "-m", "kvproof", "conform", "slot-tracker", "--scenarios", "200", "--parallel", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert run.stdout is not None
    try:
        tracker = _tracker_child(run.pid)
        for line in run.stdout:  # the notice is printed once the tracker is up; scenarios start right after
            if line.startswith(("notice:", "network:")):
                break
        time.sleep(1.0)  # mid-scenario
        assert is_alive(tracker) and os.getpgid(tracker) == tracker  # its own group, which it leads
        run.send_signal(how)
        run.wait(15)
        assert _gone(tracker), f"slot tracker {tracker} outlived kvproof ({how.name}): {alive_in_group(tracker)}"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)


@pytest.mark.dynamo
def test_a_failed_start_stops_its_tracker(slot_tracker_oracle, monkeypatch):
    from kvproof.stateful_tests.sequences import oracle

    started: list[int] = []
    spawn = process_guard.spawn_guarded

    def recording(cmd, **kwargs):
        proc = spawn(cmd, **kwargs)
        started.append(proc.pid)
        return proc

    def never_ready(self, deadline):
        raise RuntimeError("no replica event (test)")

    monkeypatch.setattr(process_guard, "spawn_guarded", recording)
    monkeypatch.setattr(oracle.SlotTrackerProcess, "wait_ready", never_ready)
    process = oracle.SlotTrackerProcess()
    with pytest.raises(oracle.OracleStartError, match="no replica event"):
        process.start()
    assert started and _gone(started[0]) and process.pid is None


@pytest.mark.dynamo
def test_the_tracker_binds_every_interface_and_the_notice_says_so(slot_tracker_process):
    if process_guard.in_private_netns():
        pytest.skip("inside --netns the notice is not printed")
    assert process_guard.binds_all_interfaces(slot_tracker_process.listening)
    notice = slot_tracker_process.bind_notice()
    assert notice is not None and "all interfaces" in notice and "--netns" in notice and "\n" not in notice


@pytest.mark.dynamo
def test_netns_runs_the_conformance_in_a_private_namespace(slot_tracker_oracle, tmp_path):
    reason = process_guard.netns_unavailable()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "report.json"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "kvproof",
            "conform",
            "slot-tracker",
            "--netns",
            "--scenarios",
            "2",
            "--parallel",
            "2",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "network: the tracker runs in a private network namespace" in ran.stdout and "notice:" not in ran.stdout
    assert ran.stdout.strip().splitlines()[-1].endswith("mismatches=0") and out.exists()
