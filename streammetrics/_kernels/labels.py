"""Encoding class labels as codes ``0..K-1`` without a Python call per row.

* :func:`encode_fixed`: rows of a fixed-width string array (numpy ``U``),
  viewed as ``uint32`` code points, looked up in a small open-addressing table
  of the K labels (a hash of the row, then a comparison with the label);
* :func:`encode_pointers`: rows of an object array, read as the addresses of
  their objects. Equal addresses are the same object, so each distinct
  address is looked up once (by the caller, in a dict) and every other row
  copies its code: a column of a few distinct label objects repeated (what
  ``pyarrow``'s ``to_pandas`` and fancy indexing give) encodes at memory
  speed. The addresses are only compared within one call, while the caller
  holds the array, so an address never outlives its object.

Both return ``-1`` for a row that is no label.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

__all__ = ["key_positions", "label_table", "encode_fixed", "encode_pointers"]

_FNV = np.uint64(1099511628211)
_SEED = np.uint64(1469598103934665603)


@kernel
def _row_hash(m, i, positions):
    h = _SEED
    for j in positions:
        h = (h ^ np.uint64(m[i, j])) * _FNV
    return h


def key_positions(labels: np.ndarray) -> np.ndarray:
    """Few code-point positions whose values tell the labels (``uint32[K, w]``)
    apart: rows are hashed on these only, then compared in full."""
    chosen: list[int] = []
    k, w = labels.shape
    while len({tuple(r) for r in labels[:, chosen].tolist()}) < k and len(chosen) < w:
        best = max((j for j in range(w) if j not in chosen),
                   key=lambda j: len({tuple(r) for r in labels[:, chosen + [j]].tolist()}))
        chosen.append(best)
    return np.array(chosen or [0], np.int64)


@kernel
def label_table(labels, positions):
    """An open-addressing table ``(slots, mask)`` of the rows of ``labels``
    (``uint32[K, w]``) hashed on ``positions``; ``slots`` holds a label's
    index or -1."""
    k = labels.shape[0]
    size = 8
    while size < 4 * k:
        size *= 2
    slots = np.full(size, -1, np.int64)
    mask = np.uint64(size - 1)
    for c in range(k):
        s = _row_hash(labels, c, positions) & mask
        while slots[s] >= 0:
            s = (s + np.uint64(1)) & mask
        slots[s] = c
    return slots, mask


@kernel
def encode_fixed(rows, labels, positions, slots, mask, out):
    """``out[i]``: the index of the label equal to ``rows[i]`` (``uint32[n, w]``), or -1."""
    w = rows.shape[1]
    for i in range(rows.shape[0]):
        s = _row_hash(rows, i, positions) & mask
        code = -1
        while slots[s] >= 0:
            c = slots[s]
            same = True
            for j in range(w):
                if rows[i, j] != labels[c, j]:
                    same = False
                    break
            if same:
                code = c
                break
            s = (s + np.uint64(1)) & mask
        out[i] = code


@kernel
def encode_pointers(ptrs, keys, codes, out, new_rows, new_slots):
    """Codes of object addresses ``ptrs`` from a table (``keys``, ``codes``) of
    the addresses already resolved.

    Returns ``(status, count)``. Status 0: every row got its code in ``out``.
    Status 1: ``count`` new addresses were entered in the table, the first row
    of each in ``new_rows`` and its slot in ``new_slots``; set their codes and
    call again. Status 2: the table is full (the rows are not a few repeated
    objects); nothing useful was written.
    """
    size = keys.shape[0]
    mask = np.uint64(size - 1)
    room = new_rows.shape[0]
    fresh = 0
    for i in range(ptrs.shape[0]):
        p = ptrs[i]
        s = ((np.uint64(p) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)) & mask
        while keys[s] != 0 and keys[s] != p:
            s = (s + np.uint64(1)) & mask
        if keys[s] == 0:
            if fresh == room:
                return 2, 0
            keys[s] = p
            new_rows[fresh] = i
            new_slots[fresh] = s
            fresh += 1
        elif fresh == 0:
            out[i] = codes[s]
    if fresh:
        return 1, fresh
    return 0, 0
