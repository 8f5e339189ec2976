"""Sensitivity measures on arrays (no graphs, no xarray)."""
