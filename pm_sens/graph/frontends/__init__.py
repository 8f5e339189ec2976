"""Front ends: bambi, pymc.dims and pymc-marketing models, GPs, and steps (BART trees)."""
