"""The command keeps freed memory for reuse (glibc's mallopt, freed_memory.py): the comparison's temporaries
then do not fault their pages in again. The command's entry applies it; importing the library does not."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from sonnx_check import freed_memory

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only"
)
def test_glibc_accepts_the_settings() -> None:
    assert freed_memory.keep() is True


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc_trim only",
)
def test_the_kept_memory_can_be_given_back_before_the_runtime_holds_a_batch() -> None:
    assert freed_memory.give_back() is True


@pytest.mark.slow
def test_the_command_applies_it_and_the_library_does_not() -> None:
    script = (
        "import sys\n"
        "from sonnx_check import freed_memory\n"
        "calls = []\n"
        "freed_memory.keep = lambda: calls.append(1) or True\n"
        "import sonnx_check.api, sonnx_check.reference\n"
        "print('library', len(calls))\n"
        "sys.argv = ['sonnx-check', '--version']\n"
        "from sonnx_check.entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('command', len(calls))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert "library 0" in done.stdout and "command 1" in done.stdout, done.stdout + done.stderr
