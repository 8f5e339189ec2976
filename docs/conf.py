"""Sphinx configuration of the docs site.

MyST pages, an executed gallery of the examples, and an API reference from the
numpydoc docstrings.
"""

import os
import sys
from pathlib import Path

import pm_sens

# the examples' printed tables and progress bars, captured for the gallery, are
# laid out for a terminal this wide (rich and pandas read it)
os.environ.setdefault("COLUMNS", "100")

# the gallery's helpers (docs/_gallery.py) are named by module path below
sys.path.insert(0, str(Path(__file__).parent))

project = "pm_sens"
version = release = pm_sens.__version__
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "gallery/**/*.ipynb", "gallery/**/*.py", "gallery/**/*.zip"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "dollarmath"]

# API pages: one per public name; the docstrings give the types, so signatures
# show none (type hints of other packages' classes would be unresolved links)
autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
# every public docstring documents each parameter, what it returns and an example
numpydoc_validation_checks = {"PR01", "PR02", "RT01", "EX01"}
# the class's attributes are described, without an example each
numpydoc_validation_exclude = {r"\.__init__$", r"^pm_sens\.Predictive\.(family|parameters)$"}

# every cross-reference resolves; names of other packages are not linked (the
# docs build offline, without their inventories)
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(xarray|xr|numpy|np|pandas|pd|pymc|pm|pytensor|arviz|arviz_plots|dask|"
        r"bambi|matplotlib|scipy|pymc_bart|pymc_marketing)(\..*)?",
    ),
]

sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["gallery"],
    # every script is executed (helper modules start with "_"), each at the
    # small size its --quick flag gives, two at a time; the marketing example
    # needs PyMC 6.3 (pymc-marketing's pin): scripts/test.sh runs it in its own
    # environment, and the time-series page shows what it printed and drew
    "filename_pattern": r"/[a-z][^/]*\.py$",
    "ignore_pattern": r"^_|^marketing_mix\.py$",
    "reset_argv": "_gallery.quick",
    "reset_modules": ("matplotlib", "seaborn", "_gallery.fork_samplers"),
    "parallel": 2,
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "capture_repr": (),
}

html_theme = "pydata_sphinx_theme"
html_title = f"pm_sens {version}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "logo": {"text": f"pm_sens {version}"},
    "footer_start": ["pm-sens-version"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
templates_path = ["_templates"]
