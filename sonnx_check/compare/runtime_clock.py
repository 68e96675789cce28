"""``--timeout`` as the runtime's own time: the limit counts only while a call to the runtime under test is
pending (starting it, loading a model, running a dataset, closing a session), never sonnx-check's own work
between two calls (the reference kernels, judging, building the next dataset).

The runners end a call at an absolute deadline (``time.monotonic()``): each time the comparison hands work
back to the runtime, the deadline moves later by the time sonnx-check spent on its own since the runtime last
answered (``Runner.postpone``). A runtime that hangs is stopped after what is left of the limit; a
comparison whose reference work is slow on a loaded machine is not, so the verdict does not depend on the
load or on the size of the reference's work.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from sonnx_check.compare.runtimes.base import DatasetRun, Feeds, Runner, Session


class RuntimeClock:
    """Moves ``runner``'s deadline past the comparison's own work."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self._own_since: float | None = time.monotonic()  # None: a runtime call is pending
        self.own_seconds = 0.0  # sonnx-check's own time so far, the deadline moved by as much

    def enter(self) -> None:
        """A call to the runtime begins: the time since the last one ended was sonnx-check's own."""
        if self._own_since is None:
            return  # nested (a dataset built while the runtime's generator runs): already counted
        own = time.monotonic() - self._own_since
        self._own_since = None
        if own > 0:
            self.own_seconds += own
            self.runner.postpone(own)

    def leave(self) -> None:
        """The runtime answered: sonnx-check's own time starts."""
        if self._own_since is None:
            self._own_since = time.monotonic()

    @contextmanager
    def runtime(self) -> Iterator[None]:
        """The block is a call to the runtime."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def session(self, session: Session) -> Session:
        return TimedSession(session, self)


class TimedSession(Session):
    """A session whose calls count as the runtime's time, and whose datasets, built by the comparison while
    the runner asks for them, count as sonnx-check's."""

    def __init__(self, session: Session, clock: RuntimeClock) -> None:
        self.session = session
        self.clock = clock

    def run_datasets(self, datasets: Iterable[Feeds]) -> Iterator[DatasetRun]:
        runs = self.session.run_datasets(self._built_outside(datasets))
        while True:
            self.clock.enter()
            try:
                run = next(runs, None)
            finally:
                self.clock.leave()
            if run is None:
                return
            yield run
            del run  # one dataset in memory at a time: the caller's copy is the last

    def _built_outside(self, datasets: Iterable[Feeds]) -> Iterator[Feeds]:
        source = iter(datasets)
        while True:
            self.clock.leave()
            try:
                feeds = next(source, None)
            finally:
                self.clock.enter()
            if feeds is None:
                return
            yield feeds
            del feeds

    def close(self) -> None:
        with self.clock.runtime():
            self.session.close()
