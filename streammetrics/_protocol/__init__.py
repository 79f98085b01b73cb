"""The protocol layer: errors, declared inputs, declared state, the accumulator
base class, results and the state file format.

Every metric family builds on this layer only; nothing here knows a metric.
The package's public names of this layer are looked up in their own modules
(``streammetrics._HOMES``).
"""
