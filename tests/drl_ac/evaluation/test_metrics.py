"""Paired comparison of two policies on common random numbers (metrics.paired_difference)."""

import math

import numpy as np
import pytest

from drl_ac.evaluation.metrics import Z95, evaluate, paired_difference
from drl_ac.theory.redundancy import gardner_fcfs_mean_response
from envs import NetworkSpec


def _run(delay, accepted):
    return {"per_instance": {"delay": np.asarray(delay, float), "accepted": np.asarray(accepted, float)}}


def test_paired_difference_by_hand():
    # a: 12 / 6 = 2 with residuals 0; b: 7 / 6, residuals (b - 7/6 n) / 2 = (-1/12, -1/6, 1/4)
    d = paired_difference(_run([2, 4, 6], [1, 2, 3]), _run([1, 2, 4], [1, 2, 3]))
    se = math.sqrt((1 / 144 + 4 / 144 + 9 / 144) / 2 / 3)
    assert d["difference"] == pytest.approx(5 / 6)
    assert d["se"] == pytest.approx(se)
    assert d["ci"] == pytest.approx([5 / 6 - Z95 * se, 5 / 6 + Z95 * se])
    same = paired_difference(_run([2, 4, 6], [1, 2, 3]), _run([2, 4, 6], [1, 2, 3]))
    assert same["difference"] == 0 and same["se"] == 0
    with pytest.raises(ValueError, match="same seed"):
        paired_difference(_run([1, 2], [1, 1]), _run([1, 2, 3], [1, 1, 1]))


def test_paired_difference_of_d1_and_d2_matches_theory_and_is_tighter():
    # FCFS redundancy, 3 servers, i.i.d. exponential copies, lambda 2.4: d = 1 is three M/M/1
    # queues at load 0.8 (mean 5), d = 2 Gardner et al.'s 1.944
    spec = NetworkSpec.from_dict({
        "arrival": {"dist": "exponential", "rate": 2.4}, "d_ub": 10, "eps": 0.1,
        "redundancy": {"servers": 3, "kind": "fcfs", "copies": "iid", "size": {"dist": "exponential", "mean": 1.0},
                       "d": [1, 2]}})
    runs = [evaluate(lambda o, a=a: np.full(o.shape[0], a, np.int64), spec, arrivals=300_000, num_envs=200,
                     warmup=1500, seed=3, per_instance=True) for a in (0, 1)]
    d = paired_difference(*runs)
    truth = 1 / (1 - 0.8) - gardner_fcfs_mean_response(3, 2, 2.4)
    assert abs(d["difference"] - truth) < 4 * d["se"], (d, truth)
    assert d["difference"] == pytest.approx(runs[0]["mean_delay"] - runs[1]["mean_delay"])
    separate = [(m["mean_delay_ci"][1] - m["mean_delay_ci"][0]) / (2 * Z95) for m in runs]
    assert d["se"] < math.hypot(*separate)  # the same arrivals: positively correlated, the noise partly cancels
