"""Rich progress bars over chunks of work, as PyMC shows them."""

from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def progress_columns(unit="draws"):
    """What a bar shows: the task, the bar, ``unit`` done, time taken and time left.

    The time taken stays on the finished bar, so a log says how long each step took.
    """
    return (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn(f"{{task.completed}}/{{task.total}} {unit}"),
        TextColumn("elapsed"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )


@contextmanager
def progress_bar(description, total, enabled, unit="draws"):
    """Yield an ``advance(n)`` callable; draws a rich bar only when ``enabled``."""
    if not enabled:
        yield lambda n=1: None
        return
    with Progress(*progress_columns(unit), transient=False) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n=1: progress.advance(task, n)
