"""experiments/optimality.py's cell_small row: the LP optimum of the chain, the learned policy
read as an admission table on the chain's states and solved exactly, and its simulation on fresh
seeds, which must agree with the exact numbers (the table is what the simulated policy does)."""

import pytest


def test_cell_small_row_is_exact_and_agrees_with_simulation(experiment, tmp_path, capsys):
    optimality = experiment("optimality")
    row, other = optimality.main(["--scenarios", "cell_small", "--steps", "8000", "--cell-envs", "128",
                                  "--arrivals", "15000", "--seeds", "0", "1", "--json", str(tmp_path / "rows.json")])
    assert (row["seed"], other["seed"]) == (0, 1) and other["decisions"] > 0  # a learner per seed
    gap, half = optimality.mean_interval([row["gap_to_optimum"], other["gap_to_optimum"]])
    assert f"blocking gap to the LP optimum {gap:+.4f} [{gap - half:+.4f}, {gap + half:+.4f}] over 2 seed(s)" \
        in capsys.readouterr().out
    assert row["optimum"]["blocking"] == pytest.approx(0.3443, abs=5e-5) and row["states"] == 16
    assert row["optimum"]["dropping"] == pytest.approx(0.05)
    exact, sim = row["learned_exact"], row["learned"]
    for key in ("blocking", "dropping"):  # within 4.5 standard errors (95% interval / 1.96 * 4.5)
        lo, hi = sim[f"{key}_ci"]
        assert abs(sim[key] - exact[key]) < 4.5 / 1.96 * (hi - lo) / 2, (key, sim, exact)
    assert row["gap_to_optimum"] == pytest.approx(exact["blocking"] - row["optimum"]["blocking"])
    assert row["passes"] == (exact["dropping"] <= 0.052 and row["gap_to_optimum"] <= 0.005)
    assert (tmp_path / "rows.json").stat().st_size > 100


@pytest.mark.slow
def test_learned_cell_small_is_within_0005_of_the_lp_optimum(experiment):
    """Issue 9's check: 2M decisions (about a minute here)."""
    (row,) = experiment("optimality").main(["--scenarios", "cell_small", "--steps", "2000000"])
    assert row["passes"], row


def test_the_tuned_thresholds_are_read_exactly(experiment):
    """mmc_c1: the best deterministic threshold (n < 7, violation 0.0747) lies far from eps, so
    the tuner finds it (sum q < 6 waiting) and its exact figures are the exact solver's; the
    randomised threshold spends budget beyond it, up to the margin the sample allows."""
    optimality = experiment("optimality")
    from envs import load_spec
    from envs.systems.network import theory

    spec = load_spec("mmc_c1")
    c, mu, lam = optimality.mmc_parameters(spec)
    best = theory.best_threshold(c, mu, lam, spec.d_ub, spec.eps)
    rules = optimality.tuned_exactly(spec, seed=0, confidence=0.95, sample=40_000)
    assert rules["threshold"]["k"] == best.threshold - c and rules["threshold"]["p"] == 0.0
    assert rules["threshold"]["objective"] == pytest.approx(best.objective, rel=1e-9)
    rand = rules["randomised threshold"]
    assert rand["k"] in (best.threshold - c, best.threshold - c + 1) and 0 < rand["p"] < 1
    assert best.violation < rand["violation"] <= spec.eps + 0.01 and rand["objective"] < best.objective


def test_a_threshold_on_waiting_jobs_is_the_chain_threshold_c_plus_k(experiment):
    """mmc_c3 (c = 3): sum q < 5 waiting admits iff fewer than 8 jobs are present, and at 5
    waiting w.p. p iff exactly 8: simulated on 200,000 arrivals, acceptance and violation lie
    within 4 standard errors of the chain's exact figures for K = c + k (a wrong offset, e.g.
    K = k + 1, misses by far more)."""
    optimality = experiment("optimality")
    from drl_ac.evaluation.metrics import evaluate
    from envs import load_spec
    from envs.systems.network import theory
    from envs.systems.network.rules import RandomisedThreshold

    spec = load_spec("mmc_c3")
    c, mu, lam = optimality.mmc_parameters(spec)
    for k, p in ((5, 0.0), (2, 0.5)):
        sim = evaluate(RandomisedThreshold(k, p, seed=1, columns=1), spec, arrivals=200_000, seed=3, probes=False)
        exact = theory.randomised_threshold_policy(c + k, p, c, mu, lam, spec.d_ub)
        for key in ("acceptance", "violation"):
            assert abs(sim[key] - getattr(exact, key)) < 4 * sim[f"{key}_se"] + 1e-4, (k, p, key, sim[key], exact)
