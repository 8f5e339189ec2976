"""Reading a PyMC model's graph: per-row values, point reads, lags, wide tables, design columns."""
