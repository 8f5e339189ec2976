"""Ops that hold a graph of their own written out into the graph that uses them.

An `OpFromGraph` (an einsum, a model's own composite op) run by PyTensor's VM
evaluates its inner graph with a compiled function kept on the op, which every
copy of the outer function shares: two threads running copies at once
(`pm_sens.graph.compile.functions.GraphFunction`) would write into the same
inner storage. Written out, the inner graph's ops belong to each copy, and
meet the outer graph's rewrites. A draw-batched one (a `Blockwise` of it, made
when the model's graph is vectorized over draws) is written out as its inner
graph vectorized over the same batch axes.
"""

from pytensor.compile.builders import OpFromGraph
from pytensor.compile.rewriting import inline_ofg_node
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.blockwise import Blockwise


@node_rewriter([OpFromGraph, Blockwise])
def local_inner_graph_written_out(fgraph, node):
    """``OpFromGraph(x)`` → its inner graph at ``x``.

    ``Blockwise(OpFromGraph)(x)`` → the inner graph vectorized to ``x``'s batch axes.
    """
    op = node.op
    if isinstance(op, OpFromGraph):
        return inline_ofg_node(node)
    if not isinstance(op.core_op, OpFromGraph):
        return None
    inner = op.core_op.fgraph
    core_inputs = [var.type() for var in inner.inputs]
    core_outputs = inner.bind(dict(zip(inner.inputs, core_inputs, strict=True)))
    batched = dict(zip(core_inputs, node.inputs, strict=True))
    outputs = vectorize_graph(core_outputs, replace=batched)
    return [out.astype(old.dtype) for out, old in zip(outputs, node.outputs, strict=True)]
