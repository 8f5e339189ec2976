"""What drives the predictive's uncertainty: `permutation_importance` and `partial_dependence`."""
