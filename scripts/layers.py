"""Draw pm_sens's layers from its imports, and list any import that goes up.

Run: python scripts/layers.py (prints the diagram of docs/architecture.md; exit
status 1 when a module imports from a layer it may not use).
"""

import ast
import pathlib
import sys
import textwrap

#: top to bottom, as folders or files under pm_sens/ ("graph/" standing for all of
#: graph's); each layer may import only the layers listed for it
#: (docs/architecture.md states what each one receives and returns)
LAYERS = {
    "plots/": ("ranking/", "_core/", "measures/", "families/"),
    "local/": ("_run/", "_core/", "graph/", "measures/", "families/"),
    "uncertainty/": ("_run/", "_core/", "graph/", "measures/", "families/"),
    "ranking/": ("_core/", "measures/", "families/"),
    "_run/": ("_core/", "graph/", "measures/", "families/"),
    "_core/": ("graph/", "measures/", "families/", "top level"),
    "graph/engine.py": ("graph/", "families/"),
    "graph/predictive.py": (
        "graph/frontends/",
        "graph/likelihoods/",
        "graph/model/",
        "graph/compile/",
        "families/",
    ),
    "graph/frontends/": ("graph/model/", "graph/compile/", "families/"),
    "graph/likelihoods/": ("graph/model/", "graph/compile/", "families/"),
    "graph/model/": ("graph/compile/", "families/"),
    "graph/compile/": ("families/",),
    "graph/": ("families/",),  # graph/__init__.py
    "measures/": ("families/",),
    "families/": (),
    #: ``pm_sens/__init__.py`` (each public name loaded on first use) and ``_version.py``
    "top level": (),
}
WIDTH = 78


def layer_of(module):
    """The layer of a module named ``pm_sens.<...>``: the longest layer path it lies in."""
    path = "/".join(module.split(".")[1:])
    found = [layer for layer in LAYERS if layer in (path + ".py", path + "/")[: 2 if path else 0]]
    found += [layer for layer in LAYERS if layer.endswith("/") and path.startswith(layer)]
    return max(found, key=len, default="top level")


def _may_use(layer, other):
    return any(other.startswith(allowed) for allowed in LAYERS[layer])


def _imports(path):
    """The pm_sens modules a file imports (``from pm_sens import x`` names ``pm_sens.x``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pm_sens"):
            if node.module == "pm_sens":
                yield from (f"pm_sens.{alias.name}" for alias in node.names)
            else:
                yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("pm_sens"))


def import_graph(root="pm_sens"):
    """``{module path: [imported pm_sens modules]}`` for every module of the package."""
    return {str(path): list(_imports(path)) for path in sorted(pathlib.Path(root).rglob("*.py"))}


def _module_name(path):
    return ".".join(pathlib.Path(path).with_suffix("").parts).removesuffix(".__init__")


def upward_imports(graph):
    """``(module, imported module)`` pairs that import from a layer not allowed."""
    return [
        (path, target)
        for path, targets in graph.items()
        for target in targets
        if layer_of(target) != layer_of(_module_name(path))
        and not _may_use(layer_of(_module_name(path)), layer_of(target))
    ]


def diagram(graph):
    """The layers top to bottom: each one's modules, and the layers it imports."""
    members = {layer: [] for layer in LAYERS}
    uses = {layer: set() for layer in LAYERS}
    for path, targets in graph.items():
        layer = layer_of(_module_name(path))
        folder = pathlib.Path("pm_sens", layer if layer.endswith("/") else "")
        members[layer].append(str(pathlib.Path(path).relative_to(folder)))
        uses[layer] |= {layer_of(t) for t in targets} - {layer}
    lines = []
    for layer in LAYERS:
        used = [other for other in LAYERS if other in uses[layer]]
        lines.append(f"{layer}  (imports: {', '.join(used) or 'no other layer'})")
        names = "  ".join(sorted(members[layer])) or layer.removeprefix("graph/")
        lines += textwrap.wrap(names, WIDTH, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)


if __name__ == "__main__":
    graph = import_graph()
    print(diagram(graph))
    wrong = upward_imports(graph)
    for path, target in wrong:
        print(f"{path} imports {target}: {layer_of(target)} is not a layer it may use")
    sys.exit(1 if wrong else 0)
