"""Work over rows, half of them in a second thread where its NumPy calls are long."""

from concurrent.futures import ThreadPoolExecutor

#: rows × draws per NumPy call (per count of a table block; of a support walk)
#: from which a chunk's rows go half on each of two threads, and the least a
#: table block holds there: shorter calls wait for the GIL longer than the
#: second thread saves
TWO_THREADS_VALUES = 32_768
#: a chunk's values (draws × rows × counts) from which its sums go on two threads:
#: smaller chunks come from graphs whose evaluation is the long part, already in
#: a thread beside them, which two summing threads would slow down
TWO_THREADS_CHUNK = 2**21


def on_two_threads(n_draws, n_rows, counts):
    """Whether a chunk's support sums go half the rows on each of two threads.

    Where each half's calls cover `TWO_THREADS_VALUES` rows × draws and the
    chunk `TWO_THREADS_CHUNK` values (``counts``: per row and draw).
    """
    values = n_draws * n_rows
    return values >= 2 * TWO_THREADS_VALUES and values * counts >= TWO_THREADS_CHUNK


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
