"""Mean-only baselines (Paananen et al. 2021, Sec. 3): derivatives of E[y|x] alone.

EAD / EAH: absolute (cross-)derivative of the predictive mean, per point; its
mean over points is the expected absolute derivative. AED / AEH: the absolute
value of the derivative averaged over points — defined only after averaging,
so they have no point dimension.
"""

import numpy as np


def absolute_derivative(derivative):
    """EAD (or EAH) per point: ``|∂m/∂x_d|`` (or ``|∂²m/∂x_d∂x_e|``)."""
    return np.abs(derivative)


def absolute_expected_derivative(derivative, point_axis):
    """AED (or AEH): ``|mean over points of ∂m/∂x_d|``, point axis removed."""
    return np.abs(np.mean(derivative, axis=point_axis))
