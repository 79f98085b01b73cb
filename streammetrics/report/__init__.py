"""Reports: the :class:`EvaluationReport` of an Evaluator (text, JSON) and the
plot primitives (:mod:`.plots`, needs matplotlib). Each result type renders
its own section; this package lays the sections out."""

from .report import EvaluationReport

__all__ = ["EvaluationReport"]
