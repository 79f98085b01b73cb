"""Benchmarks of streammetrics against numpy, scikit-learn and streaming libraries.

Run ``python -m benchmarks [--quick] [--only NAME ...]``; see ``__main__.py``.
"""
