"""The request: its arguments, its context (predictive, inputs, points, draws), its results."""
