"""How an Evaluator's batches are prepared: one :class:`Plan` per form of the arrays."""

from __future__ import annotations

import itertools

import numpy as np

from .._protocol.base import Accumulator
from .._protocol.inputs import Batch, InputTuple

__all__ = ["Plan", "make_plans"]


#: an argument of each form: 1-D, and a matrix
_FORMS = (np.empty(0), np.empty((0, 0)))


def _names_of(names) -> str:
    return ", ".join(repr(n) for n in names)


#: what the values of a domain are, in messages
_KINDS = {"labels01": "0/1 labels", "probability": "probabilities in [0, 1]", "finite": "finite reals"}


def _wants(inputs) -> str:
    return " and ".join(f"{i.name} {_KINDS.get(i.domain[0] if i.domain else None, i.what)}" for i in inputs)


class Plan:
    """How batches of one form are prepared: the inputs they are converted and checked for
    (the strictest any member declares), their consumers, and the consumer whose own
    kernel checks them (``lead``, or ``None``)."""

    __slots__ = ("inputs", "members", "lead")

    def __init__(self, inputs, members):
        self.inputs = InputTuple(inputs)
        self.members = members
        self.lead = _lead(self.inputs, members)

    def rebound(self, twin: dict) -> Plan:
        """This plan over other members (``twin``: id of a member -> its copy),
        with the same input tuple (a batch prepared by either serves both)."""
        out = Plan.__new__(Plan)
        out.inputs, out.members = self.inputs, [twin[id(m)] for m in self.members]
        out.lead = None if self.lead is None else twin[id(self.lead)]
        return out


def _lead(inputs, members):
    """The first member whose folding kernel checks exactly ``inputs``: it takes
    the arrays as converted for them (no derived form) and declares the same
    domain for each, and its ``update`` is the protocol's (its kernel checks
    the whole batch and writes nothing when it finds a bad value)."""
    for m in members:
        if type(m).update.__code__ is not Accumulator.update.__code__ or len(m.inputs) != len(inputs):
            continue
        if all(a.domain == b.domain for a, b in zip(inputs, m.inputs)):
            return m
    return None


def _candidates(members, names, inputs):
    """For each argument: the distinct inputs the members declare, strictest first."""
    if inputs is not None:
        return [[i] for i in inputs[: len(names)]]
    per_member = [tuple(i.renamed(n) for i, n in zip(m.inputs, names)) for m in members.values()]
    out = []
    for pos in range(len(names)):
        distinct = []
        for ins in per_member:
            if not any(ins[pos] == d for d in distinct):
                distinct.append(ins[pos])
        distinct.sort(key=lambda c: -sum(c.covers(d) for d in distinct))
        out.append(distinct)
    return out


def make_plans(members: dict, names: tuple, inputs=None) -> list:
    """Every combination of candidate inputs (``inputs``, when given, the only
    one) that covers some of ``members``, the form feeding the most first;
    ``ValueError`` for members a batch they take would never reach."""
    plans = []
    for combo in itertools.product(*_candidates(members, names, inputs)):
        batch = Batch(combo, [None] * len(combo), np.empty(0), 0)
        takers = [m for m in members.values() if batch.covers(m.inputs)]
        if takers:
            plans.append(Plan(combo, takers))
    if not plans:
        raise ValueError("no input form is taken by every member: the members take different kinds of arrays")
    # the form that feeds the most members is tried first: a batch of that
    # form is checked for all of them (p in [0, 1] for a probability member
    # beside an AUC), never quietly folded into some members only
    plans.sort(key=lambda plan: -len(plan.members))
    _check_routes(plans, members, names)
    return plans


def _check_routes(plans, members, names) -> None:
    """Refuse members that a batch they take would never reach.

    A batch goes to the first plan whose inputs take its form (each
    argument 1-D or a matrix). Members that take the same form but check it
    in ways no one conversion serves (0/1 labels and finite reals, class
    indices and 0/1 labels) fall into different plans, and the later
    plan's members would silently miss every such batch."""
    for form in itertools.product(_FORMS, repeat=len(names)):

        def takes(inputs):
            return all(i.takes_form(x) for i, x in zip(inputs, form))

        chosen = next((plan for plan in plans if takes(plan.inputs)), None)
        if chosen is None:
            continue
        missed = [name for name, m in members.items() if takes(m.inputs) and not any(m is c for c in chosen.members)]
        if missed:
            served = [name for name, m in members.items() if any(m is c for c in chosen.members)]
            shape = " and ".join(f"a {'1-D' if x.ndim == 1 else 'matrix'} {n}" for n, x in zip(names, form))
            raise ValueError(
                f"members {_names_of(served)} and {_names_of(missed)} both take {shape}, but check "
                f"them differently ({_wants(chosen.inputs)}; {_wants(members[missed[0]].inputs)}): "
                f"one batch cannot be checked for all of them, and {_names_of(missed)} would never "
                f"get a row. Evaluate them in two Evaluators"
            )
