"""Likelihoods: closed forms by family, on a base, vector outcomes, and the generic route."""
