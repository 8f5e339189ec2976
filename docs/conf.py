"""Sphinx configuration: the user guide (Markdown) and an API reference from docstrings."""

import pm_sens

project = "pm_sens"
version = release = pm_sens.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
myst_heading_anchors = 3
html_theme = "alabaster"
nitpicky = False
