"""A pool worker's start (:func:`events.runner.pool`), apart from the runner so that a worker
imports the engine alone: the runner's xarray and pandas cost each worker 0.3 s of CPU before
its first run."""

from __future__ import annotations


def start(nice: int = 0) -> None:
    """A pool worker's start: a Ctrl-C at the terminal is the command's to answer; ``nice``
    lowers the worker's priority (``os.nice``) where above 0."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice > 0:
        try:
            os.nice(nice)
        except OSError:  # not allowed here: the worker runs at its parent's priority
            pass
