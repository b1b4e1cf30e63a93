"""drl_ac/evaluation/calibration.py: the one-sided upper bound on a hand-computed binomial
case, and a calibrated bias that really keeps the violation <= eps: on an M/M/1 queue with
a deadline, a Q-network whose advantage falls with the queue makes every bias a threshold
policy, whose exact violation ``envs.systems.network.theory`` gives."""

import math

import numpy as np
import pytest
import torch

from drl_ac.checkpoint import LoadedPolicy
from drl_ac.evaluation.calibration import calibrate_bias, upper_bound
from drl_ac.evaluation.metrics import summarize
from drl_ac.learning.qnet import QNetwork
from envs import ObservationEncoding, Outcomes, load_spec
from envs.systems.network.theory import best_threshold, solve_lp, threshold_policy


def binomial(n: int, violated: int) -> Outcomes:
    """n instances with one accepted job each, the first ``violated`` of them late."""
    f, i = np.zeros(n), np.zeros(n, np.int64)
    ok = np.arange(n) >= violated
    return Outcomes(np.arange(n), i, np.ones(n, np.int64), np.ones(n, bool), ok, f, f, f, f, i, f, i,
                    np.zeros((n, 1)), np.zeros((n, 1)))


def test_upper_bound_of_a_binomial_by_hand():
    # 5 late of 100, one per instance: p = 0.05, se = sqrt(p (1 - p) / 99) = 0.0219043 over
    # clusters; the one-sided 95% bound adds z = 1.6448536 of it: 0.0860294
    m = summarize(binomial(100, 5), 100)
    assert m["violation"] == pytest.approx(0.05)
    assert m["violation_se"] == pytest.approx(math.sqrt(0.05 * 0.95 / 99))
    assert upper_bound(m, 0.95) == pytest.approx(0.0860294, abs=1e-7)
    assert upper_bound(m, 0.975) == pytest.approx(0.05 + 1.959964 * 0.0219043, abs=1e-6)
    assert upper_bound(m, 0.5) == pytest.approx(0.05)
    assert upper_bound({"violation": 0.0, "violation_se": 0.0}, 0.95) == 0.0


def queue_section(spec) -> dict:
    """Admission by a linear Q-network on the jobs waiting w: Q = (0, -log1p(w)). A bias b
    accepts iff w <= expm1(-b): a threshold on the jobs present."""
    net = QNetwork(1, torch.ones(1), hidden=(), num_actions=2)
    with torch.no_grad():
        net.body[0].weight.copy_(torch.tensor([[0.0], [-1.0]]))
        net.body[0].bias.zero_()
    return {"obs_dim": 1, "num_actions": 2, "admission": True, "hidden": [], "scale": torch.ones(1),
            "state_dict": net.state_dict(), "encoding": ObservationEncoding.for_spec(spec).to_dict()}


def threshold_of(section: dict) -> int:
    """K such that the policy accepts iff fewer than K jobs are present (one server:
    w = n - 1 jobs wait when n >= 1 are present)."""
    accepts = LoadedPolicy(section)(np.arange(200, dtype=np.float32)[:, None]) == 1
    waiting = int(np.argmin(accepts))
    assert accepts[:waiting].all() and not accepts[waiting:].any()
    return waiting + 1


def test_calibrated_bias_keeps_the_exact_violation_below_eps():
    # mmc_c1: M/M/1, lam 0.9, mu 1, deadline 8 on the sojourn, eps 0.1. Exact violations of
    # "accept iff n < K": K = 7: 0.0747, K = 8: 0.1065, so K = 7 is the most accepting
    # threshold within eps.
    spec = load_spec("mmc_c1")
    exact = {K: threshold_policy(K, 1, 1.0, 0.9, 8.0).violation for K in (7, 8)}
    assert exact[7] == pytest.approx(0.0747, abs=1e-4) and exact[8] == pytest.approx(0.1065, abs=1e-4)
    section = queue_section(spec)
    assert threshold_of(section) == 2  # bias 0: accept with nobody waiting
    bias, m = calibrate_bias(LoadedPolicy(section), spec, spec.eps, arrivals=20_000, seed=555, num_envs=100)
    calibrated = {**section, "bias": bias}
    K = threshold_of(calibrated)
    assert m["violation_upper"] <= spec.eps and m["violation_upper"] == pytest.approx(upper_bound(m, 0.95))
    assert threshold_policy(K, 1, 1.0, 0.9, 8.0).violation <= spec.eps  # the real violation, not the estimate
    assert K == 7, (bias, m["violation"], m["violation_se"])  # and the most accepting such threshold
    assert abs(m["violation"] - exact[7]) < 4 * m["violation_se"]  # the estimate is that policy's


def test_a_policy_that_accepts_every_job_within_eps_ends_the_search():
    # a deadline no job misses: the first bias that accepts every job is the answer; the search
    # no longer doubles the bias a dozen more times (a 200-station tandem: 8 min -> 2.5 min)
    spec = load_spec("mmc_c1", d_ub=1e6)
    lines: list[str] = []
    bias, m = calibrate_bias(LoadedPolicy(queue_section(spec)), spec, spec.eps, arrivals=2_000, seed=555, num_envs=20,
                             progress=lines.append)
    assert m["acceptance"] == 1.0 and m["violation"] == 0.0
    # hi, then lo doubled until a bias accepts all (-4: up to 53 waiting), not on to -1e4 x 0.25
    assert bias == -4.0 and len(lines) == 6, lines


def admit_vector(section: dict, truncation: int) -> np.ndarray:
    """P(admit | n jobs present), n = 0..truncation, of a queue_section policy on one server."""
    return LoadedPolicy(section).admit_probability(np.maximum(np.arange(truncation + 1) - 1, 0)[:, None])


def test_randomising_at_the_margin_spends_the_budget_a_threshold_leaves():
    # mmc_c1: the best deterministic threshold (n < 7) reaches violation 0.0747 and objective
    # 0.0459; the exact LP optimum 0.0322 at 0.1000. Calibrated with randomisation, the policy
    # (read exactly, as P(admit | n) on the birth-death chain) must beat every threshold.
    spec = load_spec("mmc_c1")
    section = queue_section(spec)
    bias, m = calibrate_bias(LoadedPolicy(section), spec, spec.eps, arrivals=20_000, seed=555, num_envs=100,
                             randomise=True)
    assert 0 < m["mix"] < 1 and m["margin"] > 0 and m["violation_upper"] <= spec.eps
    calibrated = {**section, "bias": bias, "margin": m["margin"], "mix": m["mix"]}
    exact = solve_lp(1, 1.0, 0.9, 8.0, spec.eps, 200, fixed_accept=admit_vector(calibrated, 200))
    deterministic = best_threshold(1, 1.0, 0.9, 8.0, spec.eps)
    assert exact.violation <= spec.eps and exact.objective < deterministic.objective - 0.005, (exact, m)
    assert abs(m["violation"] - exact.violation) < 4 * m["violation_se"]  # the estimate is that policy's
    assert spec.eps - m["violation_upper"] < 0.01  # the bound lands near the target, not a step below it


def test_the_mixing_probability_moves_the_violation_continuously_and_monotonely():
    spec = load_spec("mmc_c1")
    section = {**queue_section(spec), "bias": -math.log(6.0), "margin": math.log(7.0) - math.log(6.0)}
    violations = [solve_lp(1, 1.0, 0.9, 8.0, spec.eps, 200, fixed_accept=admit_vector({**section, "mix": p}, 200)
                           ).violation for p in np.linspace(0, 1, 11)]
    # accept iff n - 1 < 5 waiting (n < 7), and with probability p at n = 7: from 0.0747 to 0.1065
    assert violations[0] == pytest.approx(0.0747, abs=1e-4) and violations[-1] == pytest.approx(0.1065, abs=1e-4)
    steps = np.diff(violations)
    assert (steps > 0).all() and steps.max() < 0.006  # monotone, no jump


def test_a_schedule_spends_each_loads_budget_where_one_bias_at_the_peak_leaves_the_quiet_loads():
    # M/M/1 with deadline 4 at rates 0.5 and 0.9 (accepting every job misses it w.p.
    # exp(-(1 - rho) 4) = 0.135 at 0.5: both loads must reject), a threshold policy that also observes its
    # arrival-rate estimate (weight 0 on it): one operating point per band of the estimate.
    # Each load within eps with 95% confidence and near it (mixing), the quiet load's band
    # more accepting, and the quiet load accepting more than under the peak's one bias.
    from dataclasses import replace

    from drl_ac.evaluation.calibration import calibrate_schedule
    from drl_ac.evaluation.metrics import evaluate
    from drl_ac.study.run import at_load

    base = load_spec("mmc_c1", d_ub=4.0)
    specs = [at_load(base, x) for x in (5 / 9, 1.0)]  # mmc_c1 is at 0.9: load 1 is its rate
    assert [s.arrival_rate for s in specs] == pytest.approx([0.5, 0.9])
    net = QNetwork(2, torch.ones(2), hidden=(), num_actions=2)
    with torch.no_grad():
        net.body[0].weight.copy_(torch.tensor([[0.0, 0.0], [-1.0, 0.0]]))
        net.body[0].bias.zero_()
    encoding = replace(ObservationEncoding.for_spec(base), rate=True)
    section = {"obs_dim": 2, "num_actions": 2, "admission": True, "hidden": [], "scale": torch.ones(2),
               "state_dict": net.state_dict(), "encoding": encoding.to_dict()}
    lines: list[str] = []
    policy, measured = calibrate_schedule(LoadedPolicy(section), specs, [555, 556], base.eps, arrivals=20_000,
                                          num_envs=100, progress=lines.append, randomise=True)
    assert policy.bias_edges == pytest.approx((math.sqrt(0.5 * 0.9),))
    for m in measured:
        assert m["within"] and base.eps - m["violation_upper"] < 0.015, measured
    quiet, busy = policy.bias  # accept iff the waiting jobs w <= expm1(-bias): the quiet band admits longer queues
    assert math.floor(math.expm1(-quiet)) > math.floor(math.expm1(-busy)), policy.bias
    peak = calibrate_bias(LoadedPolicy(section), specs[1], base.eps, arrivals=20_000, seed=556, num_envs=100,
                          randomise=True)
    one = LoadedPolicy({**section, "bias": peak[0], "margin": peak[1]["margin"], "mix": peak[1]["mix"]})
    a_one, a_scheduled = (evaluate(p, specs[0], 20_000, 555, 100)["acceptance"] for p in (one, policy))
    assert a_scheduled > a_one + 0.005, (a_scheduled, a_one)
