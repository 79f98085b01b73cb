"""Results and reports in notebooks: an HTML table, and pandas frames."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

pd = pytest.importorskip("pandas")


def test_result_frames_and_html():
    r = sm.MulticlassConfusion(labels=["cat", "dog"]).update(["cat", "dog", "dog"], ["cat", "cat", "dog"]).finalize()
    frame = r.to_frame()
    assert frame.loc["accuracy", "value"] == pytest.approx(2 / 3)
    per_class = r.to_frame(per_class=True)
    assert list(per_class.index) == ["cat", "dog"]
    np.testing.assert_allclose(per_class["recall"], r.recall)
    html = r._repr_html_()
    assert html.startswith("<table><caption>MulticlassScores</caption>") and "<td>dog</td>" in html
    with pytest.raises(ValueError, match="no per-class scores"):
        sm.RegressionErrors().update([1.0, 2.0], [1.0, 3.0]).finalize().to_frame(per_class=True)


def test_report_frame_and_html_name_every_member():
    report = sm.Evaluator(task="binary").update([1, 0, 1, 0], [0.9, 0.2, 0.4, 0.6]).finalize()
    frame = report.to_frame()
    assert set(frame.index.get_level_values("member")) == set(report.parts)
    assert frame.loc[("auc", "auc"), "value"] == report.auc
    html = report._repr_html_()
    assert "binary evaluation of 4 rows" in html and "Confusion at p &gt;= 0.5" in html
    weighted = sm.BinaryConfusion().update([1, 0], [1, 0], sample_weight=[1234.5, 2.0]).finalize()
    assert "1,234.50" in weighted._repr_html_()  # weighted counts read as weighted numbers


def test_weighted_counts_far_from_one_are_shown_in_exponent_form():
    from streammetrics._protocol.result import fmt_number

    assert fmt_number(12345.678, True) == "12,345.68"
    assert fmt_number(1e300, True) == "1.0000e+300"  # not 301 digits
    assert fmt_number(1e-300, True) == "1.0000e-300"  # not 0.00
    r = sm.BinaryConfusion(threshold=0.5).update([1, 0], [0.9, 0.2], sample_weight=[1e300, 1.0]).finalize()
    assert max(len(line) for line in r._repr_html_().split("</tr>")) < 200
