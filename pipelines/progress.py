"""Progress on standard error: a rich progress bar or spinner when standard error is a terminal,
plain lines when it is not (pipes, CI, tests), so logs stay readable and standard output keeps
only a command's result."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def interactive() -> bool:
    """Whether standard error is a terminal a progress bar can redraw."""
    return sys.stderr.isatty()


def note(text: str) -> None:
    """One line on standard error: progress, notes, warnings."""
    print(text, file=sys.stderr, flush=True)


@contextlib.contextmanager
def step(start: str, done: str = "done") -> Iterator[None]:
    """A long step between a start line and an end line with its seconds; a spinner while it runs
    when standard error is a terminal."""
    began = time.monotonic()
    if interactive():
        from rich.console import Console

        console = Console(stderr=True)
        with console.status(start):
            yield
        console.print(f"{start}: {done} in {time.monotonic() - began:.0f}s")
        return
    note(f"{start} ...")
    yield
    note(f"{start}: {done} in {time.monotonic() - began:.0f}s")


class Counter:
    """Counts finished items (files written, flows finished): a rich bar when standard error is a
    terminal (`total` None shows a spinner and the count), else a plain line per item. Lines said
    through it print above the bar."""

    def __init__(self, description: str, total: int | None = None) -> None:
        self.description = description
        self.total = total
        self.done = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> "Counter":
        if interactive():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True),
                                      transient=True)
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total)
        return self

    def say(self, text: str) -> None:
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            note(text)

    def advance(self, count: int = 1, text: str | None = None) -> None:
        self.done += count
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=count)
        if text is not None:
            self.say(text)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
