"""Two pools with rerouting and replication (docs/systems/pools.md): values worked by hand, limits,
quadrature against the closed forms, a Monte Carlo of the per-job server time written from the
policy's definition, and the orderings docs/systems/pools.md cites for the formula."""

import itertools
import math
import zlib

import numpy as np
import pytest
from scipy import stats

from envs.distributions import Deterministic, Exponential, Gamma
from envs.systems.pools.theory import (
    PoolsModel,
    PoolsPolicy,
    best_tau,
    effective_loads,
    first_pool_probability,
    server_time,
    stability_bound,
)

E = math.e
UNBALANCED = ((1.0, 0.1), (0.1, 1.0))
BALANCED = ((1.0, 0.8), (0.8, 1.0))
KNOWLEDGE = [{"knowledge": "full"}, {"knowledge": "none"}, {"knowledge": "signal", "q": 0.7},
             {"knowledge": "revealed", "f": 0.4}]
ACTIONS = [("none", "same"), ("reroute", "same"), ("reroute", "fresh"), ("replicate", "same"),
           ("replicate", "fresh")]
MC_MODELS = {
    "balanced": PoolsModel((0.6, 0.4), BALANCED),
    "unbalanced": PoolsModel((0.6, 0.4), UNBALANCED),
    # three types, the third as fast on both pools (assignment falls back to p_split)
    "three": PoolsModel((0.5, 0.3, 0.2), ((1.0, 0.3, 0.6), (0.5, 1.0, 0.6))),
}


def policy(k: dict, action: str = "none", restart: str = "same", tau=math.inf, **kw) -> PoolsPolicy:
    return PoolsPolicy(action=action, restart=restart, tau=tau, **k, **kw)


def one_type(s: float, r: float) -> PoolsModel:
    return PoolsModel((1.0,), ((s,), (r,)))


# ---------------------------------------------------------------- by hand


def test_one_type_by_hand():
    """One type, first on pool 1 (speed s = 1), pool 2 speed r = 0.5, tau = 1, X ~ Exp(1)."""
    M, first = one_type(1.0, 0.5), {"knowledge": "full"}
    # reroute, same X: E[min(X, 1)] = 1 - 1/e; E[X/0.5; X > 1] = 2 (1 + 1) e^{-1} = 4/e
    assert server_time(M, policy(first, "reroute", "same", 1.0)) == pytest.approx((1 - 1 / E, 4 / E), rel=1e-12)
    # reroute, fresh X': P(X > 1) E[X'] / 0.5 = 2/e
    assert server_time(M, policy(first, "reroute", "fresh", 1.0)) == pytest.approx((1 - 1 / E, 2 / E), rel=1e-12)
    # replicate, same X: the slower copy (X/0.5 from scratch) never wins: pool 1 busy X,
    # pool 2 busy (X - 1)^+, mean e^{-1}
    assert server_time(M, policy(first, "replicate", "same", 1.0)) == pytest.approx((1.0, 1 / E), rel=1e-12)
    # replicate, fresh: reached w.p. 1/e, then an Exp race of rates 1 and 0.5 lasting 1/1.5
    race = (1 / E) / 1.5
    assert server_time(M, policy(first, "replicate", "fresh", 1.0)) == pytest.approx((1 - 1 / E + race, race),
                                                                                    rel=1e-12)


def test_replicate_same_size_to_a_faster_pool_by_hand():
    """First on a slow pool (s = 0.5), copy after tau = 1 on a fast one (r = 1), same X ~ Exp(1).
    Original ends at 2X, copy at 1 + X: pool 1 busy min(2X, 1 + X), pool 2 (that - 1)^+.
    E[min(2X, 1+X)] = 2 E[X; X<1] + E[1+X; X>1] = 2(1 - 2/e) + (1/e + 2/e) = 2 - 1/e.
    E[pool 2] = E[2X - 1; 1/2 < X < 1] + E[X; X > 1]
              = 2 (1.5 e^{-1/2} - 2/e) - (e^{-1/2} - 1/e) + 2/e = 2 e^{-1/2} - 1/e."""
    M = one_type(0.5, 1.0)
    pol = PoolsPolicy(knowledge="none", p_split=1.0, action="replicate", tau=1.0)
    assert server_time(M, pol) == pytest.approx((2 - 1 / E, 2 * math.exp(-0.5) - 1 / E), rel=1e-12)


def test_deterministic_size_by_hand():
    """X = 1, first on pool 1 (speed 1), tau = 0.5: the quadrature path with a jump in G."""
    first = {"knowledge": "none", "p_split": 1.0}
    # reroute: 0.5 on pool 1, then the whole X = 1 at speed 0.5 on pool 2
    assert server_time(one_type(1.0, 0.5), PoolsPolicy(**first, action="reroute", tau=0.5),
                       Deterministic(1.0)) == pytest.approx((0.5, 2.0), abs=1e-9)
    # copy at speed 4 ends at 0.5 + 0.25, before the original (at 1): (0.75, 0.25)
    assert server_time(one_type(1.0, 4.0), PoolsPolicy(**first, action="replicate", tau=0.5),
                       Deterministic(1.0)) == pytest.approx((0.75, 0.25), abs=1e-9)


def test_two_type_bounds_by_hand():
    # full knowledge: each type on its fast pool, E[T_i] = 0.5 * 1 / 1 = 0.5, bound 1 / 0.5 = 2
    assert stability_bound(PoolsModel((0.5, 0.5), UNBALANCED), PoolsPolicy()) == pytest.approx(2.0)
    # no knowledge, fair split: E[T_1] = 0.5 * (0.5 / 1 + 0.5 / 0.1) = 2.75, bound 1 / 2.75
    assert stability_bound(PoolsModel((0.5, 0.5), UNBALANCED), PoolsPolicy(knowledge="none")) == pytest.approx(
        1 / 2.75)
    # servers (3, 2): min(3 / 0.5, 2 / 0.5) = 4
    assert stability_bound(PoolsModel((0.5, 0.5), UNBALANCED, (3, 2)), PoolsPolicy()) == pytest.approx(4.0)
    # p = (0.8, 0.2), full: E[T] = (0.8, 0.2); bound min(1 / 0.8, 1 / 0.2) = 1.25; loads at lam = 1
    M = PoolsModel((0.8, 0.2), UNBALANCED)
    assert stability_bound(M, PoolsPolicy()) == pytest.approx(1.25)
    assert effective_loads(M, PoolsPolicy(), 1.0) == pytest.approx((0.8, 0.2))


def test_signal_map_by_hand():
    """p = (0.8, 0.2), q = 0.6: posterior given signal 2 is 0.8 * 0.4 vs 0.2 * 0.6, so the MAP
    type is 1 whatever the signal: everyone goes to pool 1 and the signal is useless.
    With q = 0.9: signal 2 -> 0.08 vs 0.18, type 2 -> pool 2; P(pool 1 | type 1) = 0.9,
    P(pool 1 | type 2) = 0.1."""
    M = PoolsModel((0.8, 0.2), UNBALANCED)
    np.testing.assert_allclose(first_pool_probability(M, PoolsPolicy(knowledge="signal", q=0.6)), [1.0, 1.0])
    np.testing.assert_allclose(first_pool_probability(M, PoolsPolicy(knowledge="signal", q=0.9)), [0.9, 0.1])
    # q = 0.8: given signal 2 the posterior ties (0.8 * 0.2 = 0.2 * 0.8), a fair coin between the
    # two types: P(pool 1 | type 1) = 0.8 + 0.2 * 0.5 = 0.9, P(pool 1 | type 2) = 0.2 + 0.8 * 0.5 = 0.6
    np.testing.assert_allclose(first_pool_probability(M, PoolsPolicy(knowledge="signal", q=0.8)), [0.9, 0.6])


# ---------------------------------------------------------------- limits


@pytest.mark.parametrize("k", KNOWLEDGE, ids=lambda k: k["knowledge"])
@pytest.mark.parametrize("action, restart", ACTIONS[1:])
def test_tau_inf_is_no_policy(k, action, restart):
    for M in MC_MODELS.values():
        assert server_time(M, policy(k, action, restart, math.inf)) == server_time(M, policy(k))


@pytest.mark.parametrize("restart", ["same", "fresh"])
def test_reroute_at_zero_sends_everyone_to_the_other_pool(restart):
    for M in MC_MODELS.values():
        got = server_time(M, PoolsPolicy(knowledge="none", p_split=0.3, action="reroute", tau=0.0, restart=restart))
        assert got == pytest.approx(server_time(M, PoolsPolicy(knowledge="none", p_split=0.7)), rel=1e-12)
    # full knowledge, unbalanced: both types on their slow pool, E[T_i] = 0.5 / 0.1 = 5
    got = server_time(PoolsModel((0.5, 0.5), UNBALANCED), PoolsPolicy(action="reroute", tau=0.0, restart=restart))
    assert got == pytest.approx((5.0, 5.0), rel=1e-12)


@pytest.mark.parametrize("s, r", [(1.0, 1.0), (0.5, 2.0), (2.0, 0.5)])
def test_full_replication(s, r):
    M, m = one_type(s, r), 1.3
    size = Exponential(m)
    # same X: both copies run until the faster finishes, min(X/s, X/r) = X / max(s, r) on each pool
    got = server_time(M, PoolsPolicy(knowledge="none", p_split=1.0, action="replicate", tau=0.0), size)
    assert got == pytest.approx((m / max(s, r), m / max(s, r)), rel=1e-12)
    # fresh X: a race of exponential rates s/m and r/m, mean m / (s + r), on both pools
    got = server_time(M, PoolsPolicy(knowledge="none", p_split=1.0, action="replicate", tau=0.0, restart="fresh"),
                      size)
    assert got == pytest.approx((m / (s + r), m / (s + r)), rel=1e-12)


@pytest.mark.parametrize("k", KNOWLEDGE, ids=lambda k: k["knowledge"])
def test_one_type_equal_speeds(k):
    """E[T] = E[X] / s wherever the job goes; neither pool is faster, so p_split decides."""
    M, m, s = PoolsModel((1.0,), ((0.8,), (0.8,)), (2, 3)), 1.5, 0.8
    pol = policy(k, p_split=0.3)
    assert server_time(M, pol, Exponential(m)) == pytest.approx((0.3 * m / s, 0.7 * m / s), rel=1e-12)
    assert stability_bound(M, pol, Exponential(m)) == pytest.approx(min(2 / (0.3 * m / s), 3 / (0.7 * m / s)))


def test_tau_per_pool():
    """tau = (inf, 0): only jobs that start on pool 2 are replicated at once. No knowledge,
    fair split, unbalanced, same X: the half on pool 1 uses X / s_1j on pool 1 only; the half
    on pool 2 keeps both pools busy for X / max(s_1j, s_2j) = X. So
    E[T_1] = 0.5 * (0.5 * 1 + 0.5 * 10) + 0.5 * 1 = 3.25 and E[T_2] = 0.5 * 1."""
    M = PoolsModel((0.5, 0.5), UNBALANCED)
    got = server_time(M, PoolsPolicy(knowledge="none", action="replicate", tau=(math.inf, 0.0)))
    assert got == pytest.approx((3.25, 0.5), rel=1e-12)


def test_loads_and_bound_agree():
    M = PoolsModel((0.6, 0.4), BALANCED, (2, 3))
    pol = PoolsPolicy(knowledge="signal", q=0.7, action="replicate", tau=(0.5, 2.0))
    lam = stability_bound(M, pol)
    t = server_time(M, pol)
    assert effective_loads(M, pol, 0.4) == pytest.approx((0.4 * t[0] / 2, 0.4 * t[1] / 3))
    assert max(effective_loads(M, pol, lam)) == pytest.approx(1.0, rel=1e-12)
    assert stability_bound(PoolsModel((1.0,), ((1.0,), (0.5,))), PoolsPolicy()) == pytest.approx(1.0)  # pool 2 idle


# ---------------------------------------------------------------- quadrature


@pytest.mark.parametrize("k", KNOWLEDGE, ids=lambda k: k["knowledge"])
@pytest.mark.parametrize("action, restart", ACTIONS)
def test_quadrature_equals_closed_form(k, action, restart):
    m = 1.7
    for M in MC_MODELS.values():
        for tau in [(0.0, 0.0), (0.4, 2.5), (3.0, math.inf)]:
            pol = policy(k, action, restart, tau)
            closed = server_time(M, pol, Exponential(m), method="closed")
            assert server_time(M, pol, Exponential(m), method="quad") == pytest.approx(closed, abs=1e-9, rel=0)
            # a scipy.stats frozen law goes through its sf() and mean()
            assert server_time(M, pol, stats.expon(scale=m)) == pytest.approx(closed, abs=1e-9, rel=0)


def test_envs_and_scipy_laws_agree():
    """Gamma of envs (mean 2, SCV 0.5) is scipy's gamma(shape 2, scale 1)."""
    M = MC_MODELS["three"]
    for action, restart in ACTIONS:
        pol = PoolsPolicy(knowledge="none", p_split=0.4, action=action, restart=restart, tau=(0.8, 1.6))
        a = server_time(M, pol, Gamma(2.0, 0.5))
        b = server_time(M, pol, stats.gamma(2.0, scale=1.0))
        assert a == pytest.approx(b, rel=1e-9)


# ---------------------------------------------------------------- Monte Carlo


def simulate(model: PoolsModel, pol: PoolsPolicy, x: np.ndarray, x_fresh: np.ndarray,
             rng: np.random.Generator) -> np.ndarray:
    """Per-job server time (n, 2) in each pool, written from the policy's definition."""
    n, J = x.size, len(model.p)
    s = np.asarray(model.speeds)
    t = rng.choice(J, size=n, p=model.p)
    coin = rng.random(n) < pol.p_split

    def faster_pool(types):  # 0 = pool 1; equal speeds: the p_split coin
        return np.where(s[0, types] > s[1, types], 0, np.where(s[0, types] < s[1, types], 1, np.where(coin, 0, 1)))

    if pol.assignment == "split" or pol.knowledge == "none":
        a = np.where(coin, 0, 1)
    elif pol.knowledge == "full":
        a = faster_pool(t)
    elif pol.knowledge == "revealed":
        a = np.where(rng.random(n) < pol.f, faster_pool(t), np.where(coin, 0, 1))
    else:  # signal: true w.p. q, else uniform over the other types; guess a most likely type
        other = (t + 1 + rng.integers(0, J - 1, n)) % J
        sig = np.where(rng.random(n) < pol.q, t, other)
        guess = np.empty(n, dtype=int)
        for k in range(J):
            post = np.array([model.p[j] * (pol.q if j == k else (1 - pol.q) / (J - 1)) for j in range(J)])
            top = np.flatnonzero(np.isclose(post, post.max(), rtol=1e-12, atol=0))
            idx = sig == k
            guess[idx] = rng.choice(top, size=idx.sum())
        a = faster_pool(guess)
    b = 1 - a
    sp, rp = s[a, t], s[b, t]
    tau = np.asarray(pol.tau)[a]
    y = x if pol.restart == "same" else x_fresh
    alone = x / sp
    done = alone <= tau  # finishes on the first pool before the threshold
    if pol.action == "none":
        ta, tb = alone, np.zeros(n)
    elif pol.action == "reroute":  # stops at tau, restarts from scratch on the other pool
        ta, tb = np.where(done, alone, tau), np.where(done, 0.0, y / rp)
    else:  # copy at tau; both busy until the first of (rest of original, whole copy) ends
        with np.errstate(invalid="ignore"):  # tau = inf: never copied, inf - inf unused
            race = np.minimum(alone - tau, y / rp)
            ta, tb = np.where(done, alone, tau + race), np.where(done, 0.0, race)
    out = np.zeros((n, 2))
    out[np.arange(n), a] = ta
    out[np.arange(n), b] = tb
    return out


def assert_mc_close(model, pol, size_sampler, size, seed, n=200_000):
    rng = np.random.default_rng(seed)
    x, x_fresh = size_sampler(rng, n), size_sampler(rng, n)
    sim = simulate(model, pol, x, x_fresh, rng)
    theory = server_time(model, pol, size)
    for i in range(2):
        est, se = sim[:, i].mean(), sim[:, i].std() / math.sqrt(n)
        assert abs(est - theory[i]) <= 4 * se + 1e-12, f"pool {i + 1}: MC {est:.5f} +- {se:.5f}, formula {theory[i]:.5f}"


@pytest.mark.parametrize("name", list(MC_MODELS))
@pytest.mark.parametrize("k", KNOWLEDGE, ids=lambda k: k["knowledge"])
@pytest.mark.parametrize("action, restart", ACTIONS)
def test_monte_carlo_exponential(name, k, action, restart):
    seed = zlib.crc32(f"{name} {k['knowledge']} {action} {restart}".encode())  # fixed, unlike hash()
    M = MC_MODELS[name]
    pol = policy(k, action, restart, (0.6, 1.5), p_split=0.35)
    assert_mc_close(M, pol, lambda rng, n: rng.exponential(1.3, n), Exponential(1.3), seed)


@pytest.mark.parametrize("action, restart", ACTIONS[1:])
def test_monte_carlo_tau_zero_and_inf(action, restart):
    M = MC_MODELS["unbalanced"]
    assert_mc_close(M, PoolsPolicy(knowledge="none", action=action, restart=restart, tau=(0.0, math.inf)),
                    lambda rng, n: rng.exponential(1.0, n), None, seed=7)


@pytest.mark.parametrize("law", [stats.lognorm(0.8, scale=0.7), stats.gamma(0.5, scale=2.0)],
                         ids=["lognormal", "gamma0.5"])
@pytest.mark.parametrize("action, restart", ACTIONS)
def test_monte_carlo_general_size(law, action, restart):
    """Quadrature path: non-exponential sizes, copies to faster and slower pools."""
    M = MC_MODELS["unbalanced"]
    pol = PoolsPolicy(knowledge="signal", q=0.7, action=action, restart=restart, tau=(0.6, 1.5))
    assert_mc_close(M, pol, lambda rng, n: law.rvs(size=n, random_state=rng), law, seed=11)


# ---------------------------------------------------------------- orderings (docs/systems/pools.md)


@pytest.mark.parametrize("speeds", [UNBALANCED, BALANCED], ids=["unbalanced", "balanced"])
def test_uncertainty_lowers_the_bound(speeds):
    M = PoolsModel((0.5, 0.5), speeds)
    full = stability_bound(M, PoolsPolicy())
    none = stability_bound(M, PoolsPolicy(knowledge="none"))
    signal = [stability_bound(M, PoolsPolicy(knowledge="signal", q=q)) for q in (0.5, 0.7, 0.9)]
    revealed = [stability_bound(M, PoolsPolicy(knowledge="revealed", f=f)) for f in (0.0, 0.4, 0.8)]
    assert signal[0] == pytest.approx(none) and revealed[0] == pytest.approx(none)  # no information
    assert none < signal[1] < signal[2] < full and none < revealed[1] < revealed[2] < full
    # the best threshold policy does not make up for it either
    best = {kn: max(best_tau(M, PoolsPolicy(knowledge=kn, action=act, restart=rs)).bound
                    for act, rs in itertools.product(("reroute", "replicate"), ("same", "fresh")))
            for kn in ("full", "none")}
    assert best["none"] < best["full"] == pytest.approx(full)
    if speeds == UNBALANCED:  # cut substantially: 0.36 vs 2 without action, 1.1 vs 2 at best
        assert none < 0.2 * full and best["none"] < 0.6 * best["full"]


def test_unbalanced_full_replication_beats_none_under_uncertainty_only():
    M = PoolsModel((0.5, 0.5), UNBALANCED)
    for k in ({"knowledge": "none"}, {"knowledge": "signal", "q": 0.8}, {"knowledge": "revealed", "f": 0.5}):
        for restart in ("same", "fresh"):
            assert stability_bound(M, policy(k, "replicate", restart, 0.0)) > stability_bound(M, policy(k))
    # same X, none: every job keeps both pools busy for X -> bound 1 (vs 1 / 2.75)
    assert stability_bound(M, PoolsPolicy(knowledge="none", action="replicate", tau=0.0)) == pytest.approx(1.0)
    # with full knowledge no job starts on its slow pool, and copies only waste: 1 < 2
    assert stability_bound(M, PoolsPolicy(action="replicate", tau=0.0)) == pytest.approx(1.0)
    assert stability_bound(M, PoolsPolicy()) == pytest.approx(2.0)


def test_balanced_no_replication_beats_full_replication_with_same_size():
    M = PoolsModel((0.5, 0.5), BALANCED)
    for k in KNOWLEDGE:
        assert stability_bound(M, policy(k)) > stability_bound(M, policy(k, "replicate", "same", 0.0))
    # but a fresh size makes a copy a free second chance: no knowledge, race of rates 1 and
    # 0.8 lasts 1/1.8 on both pools -> 1.8 > 1 / (0.5 * (0.5 + 0.5 / 0.8)) = 1.78
    assert stability_bound(M, PoolsPolicy(knowledge="none", action="replicate", tau=0.0, restart="fresh")) == (
        pytest.approx(1.8))
    assert stability_bound(M, PoolsPolicy(knowledge="none")) == pytest.approx(1 / 0.5625)


def test_systems_md_formula_range():
    """docs/systems/pools.md quotes the formula at 0.93-1.00 (unbalanced) and 1.0-1.26 (balanced) for
    replication, size kept, no type information: tau from 1 down to 0."""
    for speeds, at1 in ((UNBALANCED, 0.93), (BALANCED, 1.26)):
        M = PoolsModel((0.5, 0.5), speeds)
        assert round(stability_bound(M, PoolsPolicy(knowledge="none", action="replicate", tau=1.0)), 2) == at1
        assert stability_bound(M, PoolsPolicy(knowledge="none", action="replicate", tau=0.0)) == pytest.approx(1.0)


# ---------------------------------------------------------------- best tau


def test_best_tau_endpoints():
    U = PoolsModel((0.5, 0.5), UNBALANCED)
    assert best_tau(U, PoolsPolicy(action="replicate")) == ((math.inf, math.inf), pytest.approx(2.0))
    assert best_tau(U, PoolsPolicy(knowledge="none", action="replicate")) == ((0.0, 0.0), pytest.approx(1.0))
    # copies would only waste here: ties go to "never"
    B = PoolsModel((0.5, 0.5), BALANCED)
    assert best_tau(B, PoolsPolicy(knowledge="none", action="replicate")).tau == (math.inf, math.inf)
    with pytest.raises(ValueError, match="action"):
        best_tau(U, PoolsPolicy())


@pytest.mark.parametrize("action, restart", ACTIONS[1:])
def test_best_tau_beats_a_fine_grid(action, restart):
    M = PoolsModel((0.5, 0.5), UNBALANCED)
    pol = PoolsPolicy(knowledge="signal", q=0.8, action=action, restart=restart)
    found = best_tau(M, pol)
    fine = np.concatenate([[0.0], np.geomspace(1e-3, 1e3, 300), [math.inf]])
    brute = max(stability_bound(M, PoolsPolicy(knowledge="signal", q=0.8, action=action, restart=restart,
                                               tau=t)) for t in fine)
    assert found.bound >= brute * (1 - 1e-9)
    assert found.bound == pytest.approx(stability_bound(M, PoolsPolicy(knowledge="signal", q=0.8, action=action,
                                                                         restart=restart, tau=found.tau)))
    # an interior threshold: better than both "never" and "at once"
    assert 0 < found.tau[0] < math.inf
    assert found.bound > max(stability_bound(M, PoolsPolicy(knowledge="signal", q=0.8, action=action,
                                                            restart=restart, tau=t)) for t in (0.0, math.inf))


def test_best_tau_per_pool_beats_a_common_tau():
    """Asymmetric: pool 1 (one server, most jobs) is the bottleneck; pool 2 has two servers.
    The best copies at once off pool 1 and late off pool 2 (1.30 vs 1.08 with one tau)."""
    M = PoolsModel((0.7, 0.3), UNBALANCED, (1, 2))
    pol = PoolsPolicy(knowledge="revealed", f=0.5, action="replicate")
    common, per_pool = best_tau(M, pol, same_tau=True), best_tau(M, pol)
    assert common.tau[0] == common.tau[1]
    assert per_pool.tau[0] == 0.0 and 0 < per_pool.tau[1] < math.inf
    assert per_pool.bound > 1.1 * common.bound
    grid = np.concatenate([[0.0], np.geomspace(1e-2, 1e2, 60), [math.inf]])
    brute = max(stability_bound(M, PoolsPolicy(knowledge="revealed", f=0.5, action="replicate", tau=(t1, t2)))
                for t1 in grid for t2 in grid)
    assert per_pool.bound >= brute * (1 - 1e-9)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("make, match", [
    (lambda: PoolsModel((0.5, 0.4), BALANCED), "sum to 1"),
    (lambda: PoolsModel((0.2, 0.3, 0.5), ((1, 2), (1, 2), (1, 2))), r"speeds must have shape \(2 pools, 3 types\)"),
    (lambda: PoolsModel((0.5, 0.5), ((1.0, 0.0), (1.0, 1.0))), "speeds must be finite and > 0"),
    (lambda: PoolsModel((0.5, 0.5), BALANCED, (1, 0)), "servers"),
    (lambda: PoolsPolicy(knowledge="partial"), "knowledge='signal' with q="),
    (lambda: PoolsPolicy(knowledge="signal"), "q is needed"),
    (lambda: PoolsPolicy(knowledge="full", f=0.5), "f is needed"),
    (lambda: PoolsPolicy(knowledge="revealed", f=1.5), r"f must be a probability"),
    (lambda: PoolsPolicy(p_split=-0.1), "p_split"),
    (lambda: PoolsPolicy(action="copy"), "unknown action"),
    (lambda: PoolsPolicy(restart="new"), "unknown restart"),
    (lambda: PoolsPolicy(tau=-1.0), "tau must be"),
    (lambda: PoolsPolicy(tau=(1.0, float("nan"))), "tau must be"),
    (lambda: PoolsPolicy(assignment="random"), "unknown assignment"),
])
def test_bad_inputs_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_sizes_raise():
    M = PoolsModel((1.0,), ((1.0,), (1.0,)))

    class NoSurvival:
        mean = 1.0

    with pytest.raises(ValueError, match="no survival function"):
        server_time(M, PoolsPolicy(), NoSurvival())
    with pytest.raises(ValueError, match="finite mean"):
        server_time(M, PoolsPolicy(), stats.pareto(0.9))
    with pytest.raises(ValueError, match="method='closed' needs exponential"):
        server_time(M, PoolsPolicy(), stats.expon(), method="closed")
    with pytest.raises(ValueError, match="lam"):
        effective_loads(M, PoolsPolicy(), -1.0)
