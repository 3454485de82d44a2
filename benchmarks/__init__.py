"""Benchmarks: speed measured as ratios against a baseline run in the same process or command."""
