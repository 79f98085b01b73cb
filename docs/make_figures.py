"""Write the figures the README shows into ``docs/images/``, drawn by the library:

* ``learning_curve.png``: a logistic model trained by gradient descent on a
  synthetic task, its log loss per epoch on the training rows and on held-out
  rows (``History``), with 95% interval bands;
* ``buckets.png``: a monitored model's AUC per day (``Windowed``), the days
  whose interval leaves out the overall AUC marked (the model degrades on the
  last days).

``python docs/make_figures.py`` (needs matplotlib).
"""

from __future__ import annotations

import os

import numpy as np

import streammetrics as sm

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")


def learning_curve(rng) -> str:
    d, n_train, n_val = 60, 600, 4000
    w_true = rng.normal(size=d) * (rng.random(d) < 0.3)
    x = rng.normal(size=(n_train + n_val, d))
    y = (rng.random(n_train + n_val) < 1 / (1 + np.exp(-x @ w_true))).astype(np.int64)
    (xt, yt), (xv, yv) = (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])
    train, val = sm.History(sm.ProbabilityScores()), sm.History(sm.ProbabilityScores())
    w = np.zeros(d)
    for epoch in range(40):  # too many features for the rows: the model overfits
        for lo in range(0, n_train, 50):
            xb, yb = xt[lo : lo + 50], yt[lo : lo + 50]
            p = 1 / (1 + np.exp(-xb @ w))
            w -= 0.5 * xb.T @ (p - yb) / len(yb)
        train.update(yt, np.clip(1 / (1 + np.exp(-xt @ w)), 1e-7, 1 - 1e-7), step=epoch)
        val.update(yv, np.clip(1 / (1 + np.exp(-xv @ w)), 1e-7, 1 - 1e-7), step=epoch)
    return train.plot(
        "log_loss",
        FOLDER,
        others={"validation": val},
        name="learning_curve.png",
        title="log loss per epoch: training against validation (95% intervals)",
    )


def buckets(rng) -> str:
    n = 14_000
    t = np.datetime64("2024-03-01", "ns") + (rng.random(n) * 14 * 86400e9).astype("timedelta64[ns]")
    y = (rng.random(n) < 0.3).astype(np.int64)
    drift = np.clip((t - np.datetime64("2024-03-12", "ns")) / np.timedelta64(3, "D"), 0, 1)
    s = y * (1.2 - 0.7 * drift) + rng.normal(size=n)
    acc = sm.Windowed(sm.RankAUC(), every="1d").update(y, s, time=t)
    return acc.plot("auc", FOLDER, ci=0.95, name="buckets.png", title="AUC per day (95% intervals)")


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for path in (learning_curve(rng), buckets(rng)):
        print(path)
