"""Scores over time: the last N rows, buckets of rows or time, decayed weights,
and one state per training step."""
