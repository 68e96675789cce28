"""The ``sonnx-check`` command's entry point: the stop handler first, then everything else.

Importing the command (click, onnx, numpy) takes a good part of a second. A SIGTERM in that time used
to kill the process with Python's default (exit 143, no message) instead of the documented interrupted
run (exit 2): the handler is installed here, before any of that is imported, and a signal recorded at any
point ends the run as interrupted.
"""

from __future__ import annotations

import gc
import warnings

from sonnx_check import freed_memory, stop

# numpy's floating-point warnings ("invalid value encountered in cast"): a runtime's output may hold any
# bits, a signalling NaN among them, and casting or subtracting one raises the invalid flag. The value is
# what the comparison judges (bit for bit); the flag says nothing more, and a user's terminal or CI log
# must not get a warning for it. Python's own warnings keep their usual handling.
_NUMPY_FLOATING_POINT = r"(invalid value|overflow|divide by zero|underflow) encountered in "


def main() -> None:
    stop.install()
    warnings.filterwarnings("ignore", message=_NUMPY_FLOATING_POINT, category=RuntimeWarning)
    try:
        stop.check()
        freed_memory.keep()  # the comparison's temporaries reuse freed memory (freed_memory.py)
        # The imports (onnx, numpy, click, the command's modules) allocate hundreds of thousands of objects
        # that live as long as the process: the cyclic collector's passes over them cost about 30 ms of
        # CPU, a sixth of `import onnx` alone. None during the imports; then frozen out of every later pass.
        gc.disable()
        try:
            from sonnx_check import cli
        finally:
            gc.freeze()
            gc.enable()  # the run itself collects as usual: a long one may create cycles
        cli.main()
    except stop.Stopped:
        pass  # before the command could report it: said below
    except SystemExit as exit_:
        _decided()
        if stop.received() is None or exit_.code == 2:
            raise
    _decided()
    # A signal that arrived where nothing checked for it (importing, writing the last report) still ends
    # the run as interrupted.
    import sys

    sys.stderr.write(f"sonnx-check: interrupted ({stop.received()})\n")
    sys.exit(2)


def _decided() -> None:
    """The exit code is being decided: a later SIGINT or SIGTERM is ignored. Python's finalisation puts the
    default action back for every signal that has a Python handler, so a SIGTERM in the last milliseconds
    (after the last report) ended the process by the signal, exit 143, where the run had decided 0, 1 or 2;
    an ignored signal stays ignored. A signal recorded before this point still makes the run interrupted."""
    import signal

    for number in stop.SIGNALS:
        signal.signal(number, signal.SIG_IGN)
