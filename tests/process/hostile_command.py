"""A runtime command for the process tests (standard library only, so it starts in milliseconds): it follows
the ``CMD MODEL INPUT_DIR OUTPUT_DIR`` contract only as far as a test needs, and misbehaves as asked.

Usage: python hostile_command.py [--spawn PIDFILE] [--sleep SECONDS] [--output fifo|zero|snan|sparse:BYTES]
                                 [--input fifo|zero] MODEL IN OUT

--spawn PIDFILE: start a child in a session of its own (``setsid``) and a double-forked one (its parent
exits at once, so it is an orphan), each sleeping for minutes, and write their pids to PIDFILE, one a line,
once both run; --sleep: then sleep that long; --output: put a FIFO, a link to /dev/zero, four float32
signalling NaNs or a sparse file of BYTES as every dataset's output_0.pb; --input: replace every dataset's
input_0.pb by one of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def _plant(path: Path, kind: str) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "snan":  # a TensorProto by hand: dims [4], FLOAT, raw data of four signalling NaNs
        path.write_bytes(b"\x08\x04\x10\x01\x4a\x10" + b"\x00\x00\xa0\x7f" * 4)
    elif kind.startswith("sparse:"):
        with open(path, "wb") as handle:
            handle.truncate(int(kind.split(":", 1)[1]))
    else:
        raise SystemExit(f"unknown kind {kind}")


def _spawn(pidfile: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    session = subprocess.Popen(sleeper, start_new_session=True)
    # the double fork: the middle process exits, its child is an orphan
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        orphan = subprocess.Popen(sleeper, start_new_session=True)
        os.write(write_end, f"{orphan.pid}\n".encode())
        os._exit(0)
    os.waitpid(middle, 0)
    os.close(write_end)
    orphan_pid = int(os.read(read_end, 64).decode())
    partial = pidfile.with_suffix(".partial")
    partial.write_text(f"{session.pid}\n{orphan_pid}\n")
    partial.rename(pidfile)  # whole or absent: the test reads it once it exists


def main(argv: list[str]) -> int:
    spawn, sleep, output, given = None, 0.0, None, None
    while argv and argv[0].startswith("--"):
        flag, value = argv.pop(0), argv.pop(0)
        if flag == "--spawn":
            spawn = Path(value)
        elif flag == "--sleep":
            sleep = float(value)
        elif flag == "--output":
            output = value
        elif flag == "--input":
            given = value
    _, input_dir, output_dir = (Path(a) for a in argv)
    if spawn is not None:
        _spawn(spawn)
    for dataset in sorted(input_dir.iterdir()):
        if given is not None:
            _plant(dataset / "input_0.pb", given)
        if output is not None:
            folder = output_dir / dataset.name
            folder.mkdir(exist_ok=True)
            _plant(folder / "output_0.pb", output)
    time.sleep(sleep)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
