"""Batches of accumulators that wrap a template (``Sliced``, ``Bootstrap``).

A wrapper checks a batch with its template's ``prepare`` and carries its own
per-row extra (slice keys, row keys) beside it: the wrapper's batch holds the
template's arrays and, last, a :class:`Packed` of the template's batch, the
extra and the template that checked it.
"""

from __future__ import annotations

from typing import Any

from . import statefile
from .base import Accumulator
from .inputs import Batch, Input, InputTuple
from .keywords import arrays_by_name


class KeysInput(Input):
    """A wrapper's own argument beside the template's: slice keys, row keys."""

    def __init__(self, name: str, what: str):
        super().__init__(name)
        self.what = what
        self.domain = (what,)

    def takes_form(self, x) -> bool:
        return True


class TemplateWrapper:
    """What ``Sliced`` and ``Bootstrap`` share: an empty copy of a template whose
    settings define every state they hold, saved by its class name and settings
    beside the wrapper's own settings (``_own_settings``: name -> default)."""

    fields = ()
    #: an Evaluator member takes y and p; a wrapper takes its keys too
    _takes_keys = True
    _own_settings: dict = {}

    def _wrap(self, template, each: str, *extra: Input) -> None:
        """Hold an empty copy of ``template``; take its arrays, then ``extra``, its
        weights and its intervals."""
        if not isinstance(template, Accumulator):
            raise TypeError(f"template must be an accumulator or an Evaluator, got {type(template).__name__}")
        if template.n:
            raise ValueError(f"template must be empty: its settings define every {each}'s accumulator")
        self._template = template.copy()
        self.headline = tuple(self._template.headline)
        self.takes_weights = self._template.takes_weights
        self.intervals = bool(self._template.intervals)
        self.inputs = (*self._template.inputs, *extra)

    @property
    def template(self) -> Accumulator:
        """An empty copy of the template."""
        return self._template.copy()

    def _settings(self) -> dict[str, Any]:
        t = self._template
        return {
            "template": {"class": type(t).__name__, "settings": t.settings},
            **{k: getattr(self, k) for k in self._own_settings},
        }

    @classmethod
    def from_settings(cls, settings: dict[str, Any]):
        spec = settings.get("template") if isinstance(settings, dict) else None
        known = statefile.registry()
        if not isinstance(spec, dict) or known.get(spec.get("class")) is None:
            raise ValueError("the template is not a known accumulator")
        if not isinstance(spec.get("settings"), dict):
            raise ValueError("the template has invalid settings")
        extra = set(settings) - {"template", *cls._own_settings}
        if extra:
            raise ValueError(f"unknown settings {sorted(extra)}")
        template = known[spec["class"]].from_settings(spec["settings"])
        return cls(template, **{k: settings.get(k, v) for k, v in cls._own_settings.items()})

    def reset(self):
        """Forget every row; return ``self``."""
        with self._guard:
            self._init_parts()
        return self

    def _split_keys(self, arrays, keys, wanted: str, named=None):
        """``(arrays, keys)``: the template's arrays (``named``: some given by name)
        and the keys, given as ``keys`` or as one extra positional column; ``wanted``
        names them in the message."""
        if named:  # update(y=..., p=..., by=...)
            arrays = arrays_by_name(self._template.inputs, arrays, named, self)
        k = len(self._template.inputs)
        if keys is None and len(arrays) == k + 1:
            return arrays[:k], arrays[k]
        if len(arrays) != k:
            raise TypeError(
                f"expected {k} arrays ({', '.join(i.name for i in self._template.inputs)}) "
                f"and {wanted}, got {len(arrays)} arrays"
            )
        return arrays, keys

    def _inner(self) -> str:
        """The template as ``repr`` names it, without its rows."""
        return repr(self._template).rsplit(": n=", 1)[0]


class Packed:
    """The last entry of a wrapper's batch: the template's batch and the extra."""

    __slots__ = ("batch", "keys", "template")

    def __init__(self, batch: Batch, keys, template):
        self.batch = batch
        self.keys = keys
        self.template = template  # the accumulator whose prepare checked the batch


def pack(tb: Batch, keys, template, extra: Input) -> Batch:
    """The wrapper's batch of the template's batch ``tb`` and its ``keys``."""
    return Batch(InputTuple((*tb.inputs, extra)), (*tb.arrays, Packed(tb, keys, template)), tb.weights, tb.n)


def unpack(batch, template, made_by: str):
    """``(template batch, keys)`` of a wrapper's batch; ``TypeError`` if it was not
    made by ``made_by`` (e.g. ``"Sliced.prepare()"``) for a template it serves."""
    packed = batch.arrays[-1] if type(batch) is Batch and batch.arrays else None
    if not isinstance(packed, Packed):
        raise TypeError(f"fold() takes a Batch from {made_by}")
    if packed.template is not template and not template.takes(packed.batch):
        raise TypeError("this batch was prepared for another template")
    return packed.batch, packed.keys
