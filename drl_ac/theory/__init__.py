"""Exact results used as independent truth: queueing formulas and exact optimal policies."""
