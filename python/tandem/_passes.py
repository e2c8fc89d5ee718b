"""Passes written in Python.

A heuristic pass subclasses ``tandem.Pass`` and defines ``run(self, module, **arguments)``
returning a new ``IRModule``; a tuning pass subclasses ``tandem.TuningPass`` and defines
``choices(self, module)`` returning a dict of choice names to functions ``module -> module``
(the first one should leave the module as it is). ``tandem.register(cls)`` (also a class
decorator) registers one under ``cls.name`` (default: the class's name), after which pipeline
text names it like any built-in pass: ``InferType, MyTuning(eval=[MyPass(factor=2)])``.

Tandem evaluates a tuning pass's choices itself: each candidate is expanded with the pass's eval
passes, built by the shared builder, measured by the runner and kept in the database; the chosen
name goes into the trace, and replaying the trace asks ``choices`` again and applies that name,
so ``choices`` must propose the same candidates for the same module.
"""

from . import _tandem


class Pass:
    """A heuristic pass: ``run(self, module, **arguments) -> IRModule``."""

    name = None
    summary = ""
    required = ()
    arguments = {}  # argument name -> default (int, float, str or list of numbers)

    def run(self, module, **arguments):
        raise NotImplementedError


class TuningPass:
    """A tuning pass: ``choices(self, module) -> {name: function(module) -> IRModule}``."""

    name = None
    summary = ""
    required = ()

    def choices(self, module):
        raise NotImplementedError


def register(cls):
    """Registers a Pass or TuningPass subclass under its name; returns the class."""
    instance = cls()
    name = cls.name or cls.__name__
    if isinstance(instance, TuningPass):
        _tandem.register_tuning_pass(name, instance.choices, cls.summary, list(cls.required))
    elif isinstance(instance, Pass):
        _tandem.register_pass(name, instance.run, cls.summary, list(cls.required),
                              dict(cls.arguments))
    else:
        raise TypeError(f"{cls.__name__} is neither a tandem.Pass nor a tandem.TuningPass")
    return cls


def rewrite_calls(module, rewrite, function="main"):
    """A copy of ``module`` whose graph function is rebuilt node by node through a GraphBuilder.

    ``rewrite(builder, node, inputs)`` is called for every op call, with ``inputs`` the ids of
    its operands in the new function; it returns the id of the value that replaces the node, or
    None to copy the call unchanged. Inputs, constants and tuples are copied. Every new call is
    type-checked as it is built, so a wrong rewrite fails where it is made.
    """
    old = module.function(function)
    builder = _tandem.GraphBuilder(old.name)
    new_ids = []
    for node in old.nodes:
        inputs = [new_ids[i] for i in node.inputs]
        if node.kind == "input":
            t = node.type
            new_id = builder.input(node.name, t["shape"], t["dtype"])
        elif node.kind == "constant":
            new_id = builder.constant(node.value, node.name)
        elif node.kind == "tuple":
            new_id = builder.tuple(inputs, node.name)
        elif node.kind == "tuple_get_item":
            new_id = builder.tuple_get_item(inputs[0], node.attrs["index"], node.name)
        elif node.kind == "call":
            new_id = rewrite(builder, node, inputs)
            if new_id is None:
                new_id = builder.call(node.op, inputs, node.attrs, node.name)
        else:
            raise _tandem.Error(
                f"rewrite_calls: node %{node.name} is a {node.kind}; only modules before "
                "Legalize and backend placement can be rebuilt")
        new_ids.append(new_id)
    return module.with_function(builder.finish(new_ids[old.output]))
