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


BAR_WIDTH = 30


class Bar:
    """A progress bar on standard error (`[#####-----] 3/10 label`) when it is a terminal,
    nothing at all otherwise; `close` clears the line."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.out = stream if stream is not None else sys.stderr
        self.shown = self.out.isatty()

    def show(self, done: int, label: str = "") -> None:
        if not self.shown:
            return
        filled = BAR_WIDTH * done // self.total if self.total else BAR_WIDTH
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        self.out.write(f"{_CLEAR}[{bar}] {done}/{self.total} {label}"[:200])
        self.out.flush()

    def close(self) -> None:
        if self.shown:
            self.out.write(_CLEAR)
            self.out.flush()
