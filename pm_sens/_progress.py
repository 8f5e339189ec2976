"""Rich progress bars over chunks of work, as PyMC shows them."""

from contextlib import contextmanager

from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


@contextmanager
def progress_bar(description, total, enabled):
    """Yield an ``advance(n)`` callable; draws a rich bar only when ``enabled``."""
    if not enabled:
        yield lambda n=1: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} draws"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n=1: progress.advance(task, n)
