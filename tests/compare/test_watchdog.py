"""The watchdog that bounds each read of a streamed reply: it expires once an armed deadline passes, never
after a disarm, follows the latest arming, and its one thread ends on stop."""

from __future__ import annotations

import threading

from sonnx_check.compare.runtimes.worker.watchdog import Watchdog


def _watched() -> tuple[Watchdog, threading.Event]:
    expired = threading.Event()
    return Watchdog(expired.set), expired


def test_an_armed_deadline_that_passes_expires() -> None:
    watchdog, expired = _watched()
    watchdog.arm(0.05)
    assert expired.wait(5)
    watchdog.stop()


def test_a_disarmed_deadline_never_expires_and_the_next_arming_counts() -> None:
    watchdog, expired = _watched()
    for _ in range(200):  # one thread for all of them
        watchdog.arm(0.2)
        watchdog.disarm()
    assert not expired.wait(0.4)
    watchdog.arm(5)
    watchdog.arm(0.05)  # the latest arming holds, sooner than the one the thread waits for
    assert expired.wait(2)
    watchdog.stop()


def test_stop_ends_its_thread() -> None:
    watchdog, expired = _watched()
    before = set(threading.enumerate())
    watchdog.arm(60)
    (thread,) = set(threading.enumerate()) - before
    watchdog.stop()
    thread.join(5)
    assert not thread.is_alive() and not expired.is_set()
