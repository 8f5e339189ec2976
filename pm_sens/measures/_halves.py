"""Work over rows, half of them in a second thread where its NumPy calls are long."""

from concurrent.futures import ThreadPoolExecutor


def over_halves(work, n_rows, split):
    """``work(rows)`` for the rows ``0..n_rows``: one call, or two halves at once (``split``).

    With ``split``, ``work`` runs on the second half in a thread while it runs
    on the first here: NumPy releases the GIL inside its calls on arrays, so on
    two cores the halves overlap where the calls are long (short ones wait for
    the GIL between them). ``work`` must write only to its own rows.
    """
    if not split or n_rows < 2:
        work(slice(0, n_rows))
        return
    half = n_rows // 2
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pm_sens rows") as pool:
        second = pool.submit(work, slice(half, n_rows))
        work(slice(0, half))
        second.result()
