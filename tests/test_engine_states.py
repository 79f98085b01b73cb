"""What workers send back is read as untrusted: a forged state or error is refused."""

from __future__ import annotations

import pytest

import streammetrics as sm

pytest.importorskip("pyarrow")

from streammetrics import _engines as E  # noqa: E402


def test_a_forged_state_from_a_worker_is_a_state_file_error():
    good = E.pack_state(sm.Evaluator("binary").update([1, 0], [0.9, 0.1]))
    template = sm.Evaluator("binary")
    assert E.merged([good, good], template).n == 4
    for bad in (good[:-40], E.STATE + b"PK\x03\x04junk", b"Xjunk", E.ERROR + b"{not json"):
        with pytest.raises(sm.StateFileError):
            E.merged([good, bad], template)


def test_a_state_of_other_settings_is_refused():
    other = E.pack_state(sm.Evaluator("binary", threshold=0.3).update([1], [0.9]))
    with pytest.raises(sm.SettingsMismatchError):
        E.merged([other], sm.Evaluator("binary"))


def test_errors_travel_as_the_library_s_own():
    err = sm.BadValueError("p", (3, 1), 1.5, "probabilities must lie in [0, 1]", context="partition 2, column 'P'")
    with pytest.raises(sm.BadValueError) as info:
        E.unpack(E.pack_error(err))
    assert str(info.value) == str(err) and info.value.index == (3, 1)
    for exc in (sm.NoWeightsError("task='clustering'"), sm.StateFileError("bad"), TypeError("no")):
        with pytest.raises(type(exc)) as info:
            E.unpack(E.pack_error(exc))
        assert str(info.value) == str(exc)
