"""List pm_sens modules over 400 lines and functions over 80 lines of code.

Run: python scripts/sizes.py (exit status 1 when either list is not empty).
A function's docstring does not count; its code does.
"""

import ast
import pathlib
import sys

MODULE_LINES, FUNCTION_LINES = 400, 80


def _code_lines(node):
    body, start = node.body, node.lineno
    docstring = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    if docstring and isinstance(body[0].value.value, str) and len(body) > 1:
        start = body[0].end_lineno + 1
    return node.end_lineno - start + 1


def oversized(root="pm_sens"):
    """``(modules, functions)``: lists of ``(path or path:name, lines)`` over the limits."""
    modules, functions = [], []
    for path in sorted(pathlib.Path(root).rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > MODULE_LINES:
            modules.append((str(path), len(text.splitlines())))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = _code_lines(node)
                if lines > FUNCTION_LINES:
                    functions.append((f"{path}:{node.name}", lines))
    return modules, functions


if __name__ == "__main__":
    modules, functions = oversized()
    for name, lines in modules:
        print(f"module {name}: {lines} lines")
    for name, lines in functions:
        print(f"function {name}: {lines} lines of code")
    sys.exit(1 if modules or functions else 0)
