"""The binary rank states of ``MulticlassRankAUC(max_bins=B)`` or ``(max_memory=M)``: member ``c < K`` (a
:class:`~streammetrics.RankAUC`) ranks class ``c`` against the rest by column ``c``; with ``"ovo"`` the member of each
ordered pair ``(a, b)`` ranks class ``a`` against class ``b`` by column ``a``. Their states (also
``MultilabelRankAUC``'s members') are laid end to end.
"""

from __future__ import annotations

import itertools

import numpy as np

from .._protocol.result import fmt_number
from .._protocol.state import Field, count_total
from .ranking import RankAUC
from .ranking.accumulator import check_one_mode
from .ranking.bounded import points_of_items
from .ranking.saved import weighted_flag
from .ranking.spill import MIN_MEMORY

_RANK_FIELDS = ("lo", "hi", "counts", "weights", "pairs")
_PER_MEMBER = ("wsq", "wsq_rows")


def member_fields(per_member: str, optional: bool = False, extra=()) -> tuple:
    """The fields of member states laid end to end (``per_member``: what a row of ``sizes`` is)."""
    sizes = f"{per_member}: lengths of lo, hi, counts, weights, pairs"
    return (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        *extra,
        Field("sizes", np.int64, ("n_members", 5), merge="custom", doc=sizes),
        Field("lo", np.float64, (None,), merge="custom", nonneg=False),
        Field("hi", np.float64, (None,), merge="custom", nonneg=False),
        Field("counts", np.int64, (2, None), merge="custom"),
        Field("weights", np.float64, (2, None), merge="custom"),
        Field("pairs", np.float64, (2, None), merge="custom"),
        Field("wsq", np.float64, ("n_members", 2, 2), merge="custom", nonneg=False, optional=optional),
        Field("wsq_rows", np.int64, ("n_members", 1), merge="custom", optional=optional),
    )


BOUNDED_FIELDS = member_fields("per member", extra=(Field("member_n", np.int64, ("n_members",), merge="custom"),))


def n_members(k: int, pairs: bool) -> int:
    return k + (k * (k - 1) if pairs else 0)


def member_settings(max_bins, max_memory, count: int, what: str) -> dict:
    """The keywords of each of ``count`` members: ``max_bins``, or an even share of ``max_memory``."""
    check_one_mode(max_bins, max_memory, f"every {what}'s")
    return {"max_bins": max_bins} if max_memory is None else {"max_memory": max(MIN_MEMORY, max_memory // count)}


def join_states(head: dict, states) -> dict:
    """``head`` and the member ``states`` laid end to end, their lengths in ``sizes``."""
    sizes = np.array([[st[f].shape[-1] for f in _RANK_FIELDS] for st in states], np.int64)
    out = dict(head, sizes=sizes.reshape(len(states), 5))
    out.update({f: np.concatenate([st[f] for st in states], axis=-1) for f in _RANK_FIELDS})
    out.update({f: np.stack([st[f] for st in states]) for f in _PER_MEMBER})
    return out


def split_states(state, member_n) -> list[dict]:
    """The member states of a joined state (views into its arrays), member ``m`` of ``member_n[m]`` rows."""
    ends = np.cumsum(state["sizes"], axis=0)
    starts = ends - state["sizes"]
    out = []
    for m, n in enumerate(member_n):
        st = {"n": np.array([n], np.int64), "weighted": state["weighted"].copy()}
        st.update({f: state[f][..., starts[m, c] : ends[m, c]] for c, f in enumerate(_RANK_FIELDS)})
        st.update({f: state[f][m] for f in _PER_MEMBER})
        out.append(st)
    return out


def check_joined(state) -> int:
    """Refuse a joined state whose ``sizes`` do not lay out its arrays; its weighted flag."""
    sizes = state["sizes"]
    if np.any(sizes < 0):
        raise ValueError("entry 'sizes' holds negative lengths")
    for c, f in enumerate(_RANK_FIELDS):
        if int(sizes[:, c].sum()) != state[f].shape[-1]:
            raise ValueError(f"entry 'sizes' does not match the length of entry {f!r}")
    return weighted_flag(state)


class RankMembers:
    """The members of a bounded multiclass AUC (``pairs``: with one-vs-one members)."""

    def __init__(self, k: int, member_settings: dict, pairs: bool):
        self.k, self.pairs, self.member_settings, self.count = k, pairs, dict(member_settings), n_members(k, pairs)
        self.members = [RankAUC(**self.member_settings) for _ in range(self.count)]
        self.member_n = np.zeros(self.count, np.int64)

    def pair_index(self, a: int, b: int) -> int:
        """The member of the ordered pair ``(a, b)``, ``a != b``."""
        return self.k + a * (self.k - 1) + (b if b < a else b - 1)

    @property
    def weighted(self) -> bool:
        return bool(self.members[0].weighted) if self.members else False

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for m in self.members)

    def fold(self, y, P, w) -> None:
        """Fold a checked batch (``w`` empty unweighted): no member can refuse its part."""
        k, n = self.k, y.shape[0]
        sw = w if w.shape[0] else None
        for c in range(k):
            self.members[c].update(y == c, np.ascontiguousarray(P[:, c]), sample_weight=sw)
        self.member_n[:k] += n
        if self.pairs:
            rows = [np.flatnonzero(y == t) for t in range(k)]
            for a, b in itertools.permutations(range(k), 2):
                both = np.concatenate((rows[a], rows[b]))
                if both.shape[0]:
                    m = self.pair_index(a, b)
                    self.members[m].update(
                        np.arange(both.shape[0]) < rows[a].shape[0],
                        P[both, a],
                        sample_weight=None if sw is None else w[both],
                    )
                    self.member_n[m] += both.shape[0]
        if sw is not None and not all(m.weighted for m in self.members):
            # members that took no row turn weighted too (one state): merged with an empty weighted one
            st = RankAUC(**self.member_settings).state_dict()
            st["weighted"][0] = 1
            empty = RankAUC(**self.member_settings).load_state_dict(st)
            for m in self.members:
                if not m.weighted:
                    m.merge(empty)

    def join(self, n: int) -> dict:
        head = {"n": np.array([n], np.int64), "weighted": np.array([int(self.weighted)], np.int64)}
        return join_states(dict(head, member_n=self.member_n.copy()), [m.state_dict() for m in self.members])

    def split(self, state) -> list[dict]:
        return split_states(state, state["member_n"])

    def load(self, state) -> None:
        self.member_n = state["member_n"].copy()
        for member, st in zip(self.members, self.split(state)):
            member.load_state_dict(st)

    def check(self, state) -> None:
        k, n, member_n = self.k, int(state["n"][0]), state["member_n"]
        flag = check_joined(state)
        if np.any(member_n[:k] != n):
            raise ValueError("every one-vs-rest member must hold every row")
        if np.any(member_n < 0) or np.any(member_n > n):
            raise ValueError("entry 'member_n' holds a count outside 0..n")
        checker = RankAUC(**self.member_settings)
        states = self.split(state)
        for st in states:
            checker.load_state_dict(st)
        if flag:
            return
        # unweighted, class c's rows are member c's positives, and a pair (a, b)'s are a's and b's
        rows = [count_total(st["counts"][0]) for st in states[:k]]
        if n and sum(rows) != n:
            raise ValueError("the one-vs-rest members' positives do not add up to the rows")
        for a, b in itertools.permutations(range(k), 2) if self.pairs else ():
            st = states[self.pair_index(a, b)]
            if (count_total(st["counts"][0]), count_total(st["counts"][1])) != (rows[a], rows[b]):
                raise ValueError(f"the member of classes ({a}, {b}) disagrees with the one-vs-rest members")

    def merge(self, state) -> None:
        for member, st in zip(self.members, self.split(state)):
            member.merge(RankAUC(**self.member_settings).load_state_dict(st))
        self.member_n += state["member_n"]

    def clone(self) -> RankMembers:
        out = RankMembers.__new__(RankMembers)  # copied: a member takes a millisecond to make
        out.__dict__.update(self.__dict__, members=[m.copy() for m in self.members], member_n=self.member_n.copy())
        return out

    def flush(self) -> None:
        for m in self.members:
            m.flush()

    def results(self):
        """``(value, lower, upper, n_pos, n_neg)`` arrays over the members."""
        empty = {"auc": 0.0, "auc_lower": 0.0, "auc_upper": 0.0, "n_pos": 0, "n_neg": 0}
        rs = [m.finalize() if m.n else empty for m in self.members]
        return tuple(
            np.array([r[f] for r in rs], np.float64 if f.startswith("auc") else None)
            for f in ("auc", "auc_lower", "auc_upper", "n_pos", "n_neg")
        )

    def pair_matrix(self, per_member) -> np.ndarray:
        """``out[a, b]`` the pair member's value (diagonal 0); zeros without pairs."""
        out = np.zeros((self.k, self.k))
        for a, b in itertools.permutations(range(self.k), 2) if self.pairs else ():
            out[a, b] = per_member[self.pair_index(a, b)]
        return out

    def class_points(self, c: int):
        """Class ``c``'s one-vs-rest points (a bin at its lower edge)."""
        st = self.members[c].state_dict()
        ab = st["weights"] if st["weighted"][0] else st["counts"]
        return points_of_items(
            (st["lo"], st["lo"] if st["hi"].shape[0] == 0 else st["hi"], ab, st["pairs"]), bool(st["weighted"][0])
        )

    def average_precision(self, c: int) -> float:
        member = self.members[c]
        return member.average_precision() if member.n else 0.0


def bound_notes(values) -> dict:
    """``field -> note`` (``(exact)`` or ``(bounds lo .. hi)``) of scalar scores with bounds."""
    notes = {}
    for f, v in values.items():
        lo, hi = values.get(f + "_lower"), values.get(f + "_upper")
        if lo is None or hi is None or isinstance(v, np.ndarray) or isinstance(lo, np.ndarray):
            continue
        notes[f] = "  (exact)" if lo == hi else f"  (bounds {fmt_number(lo)} .. {fmt_number(hi)})"
    return notes


def shown_fields(values, notes) -> list:
    """The fields a report shows: all but the scalar bounds given in ``notes``."""
    return [f for f in values if not (f.endswith(("_lower", "_upper")) and f[:-6] in notes)]
