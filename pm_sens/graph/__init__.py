"""Everything that touches a PyTensor graph: the `Predictive`, likelihoods, compiled chunks.

See ``docs/architecture.md`` for the modules and the path of one call.
"""
