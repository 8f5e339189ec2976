"""Compiling PyTensor graphs: pytensor.function, the rewrites, derivatives, chunk functions."""
