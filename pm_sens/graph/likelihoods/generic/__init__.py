"""Likelihoods without closed forms: moments and divergences by summation or quadrature."""
