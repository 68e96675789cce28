"""How many rooms one ``--compare`` run of a model enters, and how often it goes back through a door (issue
28).

Run: python benchmarks/count_rooms.py [MODEL] [--level package|module] [--within ROOM] [--depth N]
         [--no-edges] [--json]
     (MODEL: sample_models/conforming/small_cnn.onnx by default)

Runs ``sonnx-check MODEL --compare --format json`` in this process, as the command line does, under a
profiler (``sys.setprofile`` and ``threading.setprofile``) that sees every Python call and return of the
package's own code. A *room* is a sub-package of sonnx_check (``compare.judging``, ``reference``; the modules
at the package's top level are the room ``sonnx_check``), or with ``--level module`` a module. A *return
across rooms* is a function of one room returning to its caller in another: the caller is the nearest frame
of the package's code up the stack (numpy's or the standard library's frames in between are passed over).
``--within compare`` counts only the rooms inside ``sonnx_check.compare`` (the others are passed over too).
``--depth N`` follows the model's path only: the calls at most N frames of the package's code below the
comparison's entry (``compare_loaded``), where the steps of a run are, not the work each step repeats.
Calls the interpreter makes rather than the code (a weak reference's callback, ``__del__``, run when an
object dies in whatever frame happens to be running) are no door and are not counted, nor is anything
they call.

Prints the rooms entered (distinct), the distinct (from room -> to room) return doors, the number of returns
across rooms, and the rooms by the calls made into them. What runs in the runtime's worker process
(onnxruntime's session) is not traced: it is another process; the rooms counted are the ones the checker's
own process walks through. The counts depend on the model (a larger one repeats the same doors more often,
not new ones) and on the package version, not on timing: the same tree gives the same counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import weakref
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "sonnx_check"
DEFAULT_MODEL = ROOT / "sample_models" / "conforming" / "small_cnn.onnx"


def room_of(filename: str, level: str, within: str, cache: dict[str, str | None]) -> str | None:
    """The room of a source file of the package, or None for code outside it."""
    if filename in cache:
        return cache[filename]
    path = Path(filename)
    room: str | None = None
    try:
        parts = path.resolve().relative_to(PACKAGE_DIR.resolve()).with_suffix("").parts
    except ValueError:
        parts = ()
    if parts:
        if level == "module":
            dotted = [p for p in parts if p != "__init__"]
            room = ".".join(["sonnx_check", *dotted])
        else:
            room = ".".join(["sonnx_check", *parts[:-1]])
        if within and room != f"sonnx_check.{within}" and not room.startswith(f"sonnx_check.{within}."):
            room = None
    cache[filename] = room
    return room


ENTRY = "compare_loaded"  # the comparison's entry for one loaded model, the same since issue 28 was filed


class RoomCounter:
    def __init__(self, level: str, within: str, depth: int | None = None) -> None:
        self.level, self.within, self.depth = level, within, depth
        self._rooms: dict[str, str | None] = {}
        self._modules: dict[str, str | None] = {}  # any module of the package, for --depth
        self.calls: Counter[str] = Counter()
        self.doors: Counter[tuple[str, str]] = Counter()

    def _too_deep(self, frame: FrameType) -> bool:
        """With ``--depth``: whether ``frame`` is more than ``depth`` package frames below the entry, or
        not below it at all."""
        if self.depth is None:
            return False
        below = 0
        up: FrameType | None = frame
        while up is not None:
            if up.f_code.co_name == ENTRY and room_of(up.f_code.co_filename, "module", "", self._modules):
                return below > self.depth or below == 0
            if room_of(up.f_code.co_filename, "module", "", self._modules) is not None:
                below += 1
            up = up.f_back
        return True

    @staticmethod
    def _in_callback(frame: FrameType) -> bool:
        """Whether ``frame`` runs inside a call the interpreter made when an object died: a finalizer, or a
        weak reference's callback (called with the dead reference as its only argument)."""
        up: FrameType | None = frame
        while up is not None and up.f_code.co_name != ENTRY:
            code = up.f_code
            if code.co_name == "__del__":
                return True
            if code.co_argcount == 1 and isinstance(up.f_locals.get(code.co_varnames[0]), weakref.ref):
                return True
            up = up.f_back
        return False

    def _room(self, frame: FrameType | None) -> str | None:
        if frame is None:
            return None
        return room_of(frame.f_code.co_filename, self.level, self.within, self._rooms)

    def _caller_room(self, frame: FrameType) -> str | None:
        caller = frame.f_back
        while caller is not None:
            room = self._room(caller)
            if room is not None:
                return room
            caller = caller.f_back
        return None

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        room = self._room(frame)
        if room is None or self._too_deep(frame) or self._in_callback(frame):
            return
        if event == "call":
            self.calls[room] += 1
            return
        caller = self._caller_room(frame)
        if caller is not None and caller != room:
            self.doors[(room, caller)] += 1


def trace_one_run(model: Path, level: str, within: str, edges: bool, depth: int | None = None) -> RoomCounter:
    sys.path.insert(0, str(ROOT))
    from sonnx_check import entry

    counter = RoomCounter(level, within, depth)
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        argv = [str(model), "--compare", "--format", "json", "--output", str(report)]
        if not edges:
            argv.append("--no-node-edges")
        saved = sys.argv
        sys.argv = ["sonnx-check", *argv]
        threading.setprofile(counter.profile)
        sys.setprofile(counter.profile)
        try:
            entry.main()
        except SystemExit as stopped:
            if stopped.code not in (0, 1, None):
                raise SystemExit(f"count_rooms: sonnx-check ended with exit code {stopped.code}") from None
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
            sys.argv = saved
    return counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--level", choices=("package", "module"), default="package")
    parser.add_argument("--within", default="", help="only the rooms inside this sub-package (compare)")
    parser.add_argument("--depth", type=int, help=f"only the calls at most N frames below {ENTRY}")
    parser.add_argument("--no-edges", action="store_true", help="without the edge battery (--no-node-edges)")
    parser.add_argument("--json", action="store_true", help="the counts as JSON")
    args = parser.parse_args()
    if not args.model.is_file():
        raise SystemExit(f"count_rooms: {args.model}: no such model file")
    counter = trace_one_run(args.model, args.level, args.within, edges=not args.no_edges, depth=args.depth)
    summary = {
        "model": str(args.model),
        "level": args.level,
        "within": args.within or "sonnx_check",
        "depth": args.depth,
        "rooms_entered": len(counter.calls),
        "return_doors": len(counter.doors),
        "returns_across_rooms": sum(counter.doors.values()),
        "calls_by_room": dict(counter.calls.most_common()),
        "returns_by_door": {f"{a} -> {b}": n for (a, b), n in counter.doors.most_common()},
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    below = f", at most {args.depth} below {ENTRY}" if args.depth is not None else ""
    print(f"model: {args.model}  (rooms: {args.level}s of {summary['within']}{below})")
    print(f"rooms entered: {summary['rooms_entered']}")
    print(f"distinct return doors (room -> caller's room): {summary['return_doors']}")
    print(f"returns across rooms: {summary['returns_across_rooms']}")
    print("calls by room:")
    for room, n in counter.calls.most_common():
        print(f"  {n:>10}  {room}")


if __name__ == "__main__":
    main()
