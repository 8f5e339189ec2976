"""Draw pm_sens's layers from its imports, and list any import that goes up.

Run: python scripts/layers.py (prints the diagram of docs/architecture.md; exit
status 1 when a module imports from a layer it may not use).
"""

import ast
import pathlib
import sys
import textwrap

#: top to bottom; each layer may import only the layers listed for it (SPEC §4)
LAYERS = {
    "plots/": ("public layer", "measures/", "families/"),
    "public layer": ("graph/", "measures/", "families/"),
    "graph/": ("families/",),
    "measures/": ("families/",),
    "families/": (),
}
FOLDERS = [layer for layer in LAYERS if layer.endswith("/")]
WIDTH = 78


def layer_of(module):
    """The layer of a module named ``pm_sens.<...>``."""
    parts = module.split(".")
    if len(parts) > 1 and f"{parts[1]}/" in LAYERS:
        return f"{parts[1]}/"
    return "public layer"


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
        and layer_of(target) not in LAYERS[layer_of(_module_name(path))]
    ]


def diagram(graph):
    """The layers top to bottom: each one's modules, and the layers it imports."""
    members = {layer: [] for layer in LAYERS}
    uses = {layer: set() for layer in LAYERS}
    for path, targets in graph.items():
        layer = layer_of(_module_name(path))
        folder = pathlib.Path("pm_sens", layer if layer in FOLDERS else "")
        members[layer].append(str(pathlib.Path(path).relative_to(folder)))
        uses[layer] |= {layer_of(t) for t in targets} - {layer}
    lines = []
    for layer in LAYERS:
        used = [other for other in LAYERS if other in uses[layer]]
        lines.append(f"{layer}  (imports: {', '.join(used) or 'no other layer'})")
        names = "  ".join(sorted(members[layer]))
        lines += textwrap.wrap(names, WIDTH, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)


if __name__ == "__main__":
    graph = import_graph()
    print(diagram(graph))
    wrong = upward_imports(graph)
    for path, target in wrong:
        print(f"{path} imports {target}: {layer_of(target)} is not a layer it may use")
    sys.exit(1 if wrong else 0)
