"""Progress on standard error while a long call runs: a spinner with the seconds
elapsed on a terminal, nothing at all otherwise (so scripts and logs stay clean)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

FRAMES = "|/-\\"
INTERVAL_SECONDS = 0.1
_CLEAR = "\r\x1b[K"


@contextlib.contextmanager
def waiting(label: str, stream: TextIO | None = None) -> Iterator[None]:
    """Show `label`, a spinner and the elapsed seconds on `stream` (standard error by
    default) until the block ends, when the stream is a terminal; the line is cleared
    afterwards."""
    out = stream if stream is not None else sys.stderr
    if not out.isatty():
        yield
        return
    done = threading.Event()
    spinner = threading.Thread(target=_spin, args=(label, out, done), daemon=True)
    spinner.start()
    try:
        yield
    finally:
        done.set()
        spinner.join()
        out.write(_CLEAR)
        out.flush()


def _spin(label: str, out: TextIO, done: threading.Event) -> None:
    started = time.monotonic()
    frame = 0
    while True:
        elapsed = int(time.monotonic() - started)
        out.write(f"{_CLEAR}{FRAMES[frame % len(FRAMES)]} {label} {elapsed}s")
        out.flush()
        frame += 1
        if done.wait(INTERVAL_SECONDS):
            return
