"""Local measures: `sensitivity` and `integrated_gradients`, and the passes behind them."""
