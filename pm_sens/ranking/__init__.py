"""Rankings of the inputs from stored results: `summary` and `importance`."""
