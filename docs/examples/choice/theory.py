"""Exact results: a random split of Poisson arrivals makes each server an M/M/1 queue."""

from __future__ import annotations

from collections.abc import Sequence


def random_split_mean_response(lam: float, speeds: Sequence[float], split: Sequence[float]) -> float:
    """Mean response time when each job goes to server i with probability split[i]: the
    split-weighted M/M/1 means 1 / (mu_i - p_i lam); infinite if a server is overloaded."""
    total = 0.0
    for mu, p in zip(speeds, split, strict=True):
        if p > 0:
            if p * lam >= mu:
                return float("inf")
            total += p / (mu - p * lam)
    return total
