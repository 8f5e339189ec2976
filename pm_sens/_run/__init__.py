"""Running compiled graphs over the draws: chunks, dask blocks, background compiles, progress."""
