"""Throughput benchmarks of bandjax against the baselines a user would otherwise write.

Run ``python -m benchmarks`` (``--quick`` for a smoke run of a few seconds); see BENCHMARKS.md.
"""
