"""Cell loss systems against values recomputed independently (docs/systems/cell.md), against
generators solved in the test, and the admission LP against a hand solution."""

import itertools

import numpy as np
import pytest

from envs.queueing import erlang_b
from envs.systems.cell.theory import (
    admission_lp,
    ctmc_stationary,
    evaluate_admission_policy,
    fractional_guard_channel,
    guard_channel,
    kaufman_roberts,
)


def generator(n, moves):
    """Generator from a list of (from, to, rate)."""
    Q = np.zeros((n, n))
    for s, t, r in moves:
        if s != t:
            Q[s, t] += r
    np.fill_diagonal(Q, -Q.sum(1))
    return Q


# ---------------------------------------------------------------- closed forms


def test_published_values():
    assert round(erlang_b(10, 7.0), 6) == 0.078741
    np.testing.assert_allclose(kaufman_roberts(10, [1, 2], [4.0, 1.0]), [0.049689, 0.123262], atol=5e-7)
    new, handover = guard_channel(10, 2, 6.0, 2.0)
    assert round(new, 6) == 0.280752
    assert round(handover, 6) == 0.009851
    b = erlang_b(10, 8.0)
    assert round(b, 6) == 0.121661
    assert guard_channel(10, 0, 6.0, 2.0) == pytest.approx((b, b), rel=1e-12)


def test_kaufman_roberts_against_2d_chain():
    """Solve the two-class chain on (n1, n2) with n1 b1 + n2 b2 <= C directly."""
    C, b, a = 7, (1, 3), (2.5, 0.8)
    states = [(i, j) for i in range(C + 1) for j in range(C + 1) if i * b[0] + j * b[1] <= C]
    index = {s: k for k, s in enumerate(states)}
    moves = []
    for (i, j), k in index.items():
        if (i + 1, j) in index:
            moves.append((k, index[(i + 1, j)], a[0]))
        if (i, j + 1) in index:
            moves.append((k, index[(i, j + 1)], a[1]))
        if i:
            moves.append((k, index[(i - 1, j)], i))
        if j:
            moves.append((k, index[(i, j - 1)], j))
    p = ctmc_stationary(generator(len(states), moves))
    used = np.array([i * b[0] + j * b[1] for i, j in states])
    expected = [p[used > C - bk].sum() for bk in b]
    np.testing.assert_allclose(kaufman_roberts(C, b, a), expected, rtol=1e-10)


def test_kaufman_roberts_single_class_and_large_cell():
    assert kaufman_roberts(12, [1], [9.0])[0] == pytest.approx(erlang_b(12, 9.0), rel=1e-12)
    big = kaufman_roberts(106, [1, 4, 10], [400.0, 40.0, 10.0])  # q grows like a^j / j!: rescaled
    assert np.all(np.isfinite(big)) and np.all((big > 0) & (big < 1)) and big[0] < big[1] < big[2]


def test_guard_channel_against_generator():
    C, g, nu, h = 6, 2, 3.0, 1.5
    moves = [(n, n + 1, (nu if n < C - g else 0.0) + h) for n in range(C)] + [(n, n - 1, n) for n in range(1, C + 1)]
    p = ctmc_stationary(generator(C + 1, moves))
    new, drop = guard_channel(C, g, nu, h)
    assert new == pytest.approx(p[C - g:].sum(), rel=1e-10)
    assert drop == pytest.approx(p[C], rel=1e-10)


@pytest.mark.parametrize("g", [0, 1, 2, 3, 10])
def test_fractional_guard_channel_reduces_to_guard_channel(g):
    C = 10
    step = [1.0 if n < C - g else 0.0 for n in range(C)]
    assert fractional_guard_channel(C, 6.0, 2.0, step) == pytest.approx(guard_channel(C, g, 6.0, 2.0), rel=1e-12)


def test_fractional_guard_channel_all_ones_is_erlang_b():
    b = erlang_b(10, 8.0)
    assert fractional_guard_channel(10, 6.0, 2.0, [1.0] * 10) == pytest.approx((b, b), rel=1e-12)


def test_fractional_guard_channel_interpolates():
    """A fractional last step lies between the two integer guard settings it interpolates."""
    lo, hi = guard_channel(10, 3, 6.0, 2.0), guard_channel(10, 2, 6.0, 2.0)
    mid = fractional_guard_channel(10, 6.0, 2.0, [1.0] * 7 + [0.5, 0.0, 0.0])
    assert hi[0] < mid[0] < lo[0] and lo[1] < mid[1] < hi[1]
    with pytest.raises(ValueError):
        fractional_guard_channel(10, 6.0, 2.0, [1.0] * 9)


def test_ctmc_stationary():
    Q = generator(3, [(0, 1, 2.0), (1, 2, 1.0), (2, 0, 4.0), (1, 0, 1.0)])
    pi = ctmc_stationary(Q)
    np.testing.assert_allclose(pi @ Q, 0.0, atol=1e-12)
    assert pi.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="closed class"):
        ctmc_stationary(generator(3, [(0, 1, 1.0), (1, 0, 1.0)]))  # state 2 is absorbing on its own


# ---------------------------------------------------------------- admission LP

# Hand-solved case: capacity 2 units, one UE type of demand 1, requests at rate 1 in every
# state, sessions end at rate 1 each. With two sessions a channel event at rate 1 makes
# them no longer fit together and drops one (2 -> 1, one drop). States 0, 1, 2 sessions.
#   x0 = p0 a0, x1 = p1 a1. Cuts: x0 = p1 (0|1), x1 = (2 + 1) p2 (1|2).
#   Admit all: p = (3, 3, 1) / 7, blocking p2 = 1/7, dropping = p2 / (p0 + p1) = 1/6.
#   eps = 0.1: drops p2 = x1/3 <= 0.1 (x0 + x1)  =>  x1 <= (3/7) x0. Maximising the admission
#   rate x0 + x1: with x0 = s p0 and x1 = t p0, p0 = 1 / (1 + s + t/3) and the rate (s + t) p0
#   grows in both s and t, so s = 1, t = 3/7: p0 = p1 = 7/15, p2 = 1/15, a1 = 3/7,
#   admission rate 2/3, blocking 1/3, dropping (1/15) / (2/3) = 1/10 = eps.
HAND = dict(request_rates=[1.0, 1.0, 1.0], admit_to=[1, 2, -1],
            transitions=[(1, 0, 1.0), (2, 1, 2.0), (2, 1, 1.0, 1)])


def test_lp_hand_solved():
    sol = admission_lp(**HAND, eps=0.1)
    np.testing.assert_allclose(sol.admit, [1.0, 3 / 7, 0.0], atol=1e-8)
    np.testing.assert_allclose(sol.stationary, [7 / 15, 7 / 15, 1 / 15], atol=1e-9)
    assert sol.blocking == pytest.approx(1 / 3, abs=1e-9)
    assert sol.dropping == pytest.approx(0.1, abs=1e-9)
    assert sol.admission_rate == pytest.approx(2 / 3, abs=1e-9)


def test_lp_eps_one_admits_everywhere_feasible():
    sol = admission_lp(**HAND, eps=1.0)
    np.testing.assert_allclose(sol.admit, [1.0, 1.0, 0.0], atol=1e-9)
    assert sol.blocking == pytest.approx(1 / 7, abs=1e-9)
    assert sol.dropping == pytest.approx(1 / 6, abs=1e-9)


def loss_chain(C, load):
    """Erlang loss: one type, demand 1, no drops."""
    return dict(request_rates=[load] * (C + 1), admit_to=[n + 1 for n in range(C)] + [-1],
                transitions=[(n, n - 1, float(n)) for n in range(1, C + 1)])


@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_lp_without_drops_is_erlang_b(eps):
    sol = admission_lp(**loss_chain(10, 7.0), eps=eps)
    np.testing.assert_allclose(sol.admit[:10], 1.0, atol=1e-9)
    assert sol.blocking == pytest.approx(erlang_b(10, 7.0), abs=1e-9)
    assert sol.dropping == 0.0


def handover_chain(C, nu, h):
    """New calls controllable; handovers carried if a unit is free, else dropped (self-loop)."""
    return dict(request_rates=[nu] * (C + 1), admit_to=[n + 1 for n in range(C)] + [-1],
                transitions=[(n, n + 1, h) for n in range(C)] + [(C, C, h, 1)]
                + [(n, n - 1, float(n)) for n in range(1, C + 1)])


def test_lp_handover_case_is_a_fractional_guard_channel():
    """Ramjee, Nagarajan, Towsley: min new-call blocking s.t. handover dropping <= eps is
    solved by a fractional guard channel. Check the shape and re-evaluate it in closed form."""
    C, nu, h, eps = 10, 6.0, 2.0, 0.02
    sol = admission_lp(**handover_chain(C, nu, h), eps=eps, reference_rate=h)
    a = sol.admit[:C]
    assert np.all(np.diff(a) <= 1e-9)  # non-increasing in the busy count
    assert np.sum((a > 1e-7) & (a < 1 - 1e-7)) <= 1  # at most one randomised state
    new, drop = fractional_guard_channel(C, nu, h, a)
    assert new == pytest.approx(sol.blocking, abs=1e-8)
    assert drop == pytest.approx(sol.dropping, abs=1e-8)
    assert drop == pytest.approx(eps, abs=1e-8)  # binding: blocking falls as dropping rises
    feasible = [guard_channel(C, g, nu, h) for g in range(C + 1) if guard_channel(C, g, nu, h)[1] <= eps]
    assert sol.blocking <= min(f[0] for f in feasible) + 1e-9


def test_lp_infeasible_raises():
    # blocking every new call still drops handovers with probability erlang_b(10, 2) ~ 4e-5
    with pytest.raises(ValueError, match="no solution"):
        admission_lp(**handover_chain(10, 6.0, 2.0), eps=1e-6, reference_rate=2.0)


def channel_cell(C=4, lam=1.5, gamma=(0.7, 0.4)):
    """A cell with channel dynamics: each session is good (demand 1) or bad (demand 2);
    good -> bad at rate gamma[0], bad -> good at gamma[1]; sessions end at rate 1; new UEs
    arrive good. A good -> bad move that no longer fits drops that session."""
    states = [(g, b) for g in range(C + 1) for b in range(C + 1) if g + 2 * b <= C]
    idx = {s: k for k, s in enumerate(states)}
    rates, to, moves = [], [], []
    for (g, b), k in idx.items():
        rates.append(lam)
        to.append(idx.get((g + 1, b), -1))
        if g:
            moves.append((k, idx[(g - 1, b)], float(g)))
            if (g - 1, b + 1) in idx:
                moves.append((k, idx[(g - 1, b + 1)], g * gamma[0]))
            else:
                moves.append((k, idx[(g - 1, b)], g * gamma[0], 1))
        if b:
            moves.append((k, idx[(g, b - 1)], float(b)))
            moves.append((k, idx[(g + 1, b - 1)], b * gamma[1]))
    return dict(request_rates=rates, admit_to=to, transitions=moves)


def test_lp_with_channel_dynamics():
    model = channel_cell()
    free = evaluate_admission_policy(**model, admit=np.ones(len(model["request_rates"])))
    prev = 1.0
    for eps in (0.02, 0.05, 0.1, 1.0):
        sol = admission_lp(**model, eps=eps)
        assert sol.dropping <= eps + 1e-9
        again = evaluate_admission_policy(**model, admit=sol.admit)  # independent route: pi Q = 0
        assert again.blocking == pytest.approx(sol.blocking, abs=1e-8)
        assert again.dropping == pytest.approx(sol.dropping, abs=1e-8)
        assert sol.blocking <= prev + 1e-12  # a looser bound never costs blocking
        prev = sol.blocking
    assert free.dropping > 0.02  # so the tight bounds do bind
    assert prev == pytest.approx(free.blocking, abs=1e-9)  # eps = 1: admit-all is optimal here


def test_lp_two_types_admit_all_is_kaufman_roberts():
    """Multi-type interface: evaluating complete sharing reproduces Kaufman-Roberts, and the
    LP (no drops) is at least as good in total refused requests."""
    C, b, a = 6, (1, 2), (2.0, 1.0)
    states = [(i, j) for i, j in itertools.product(range(C + 1), repeat=2) if i * b[0] + j * b[1] <= C]
    idx = {s: k for k, s in enumerate(states)}
    rates = np.tile(a, (len(states), 1))
    to = np.array([[idx.get((i + 1, j), -1), idx.get((i, j + 1), -1)] for i, j in states])
    moves = [(idx[(i, j)], idx[(i - 1, j)], float(i)) for i, j in states if i] + \
            [(idx[(i, j)], idx[(i, j - 1)], float(j)) for i, j in states if j]
    full = evaluate_admission_policy(rates, to, moves, np.ones_like(rates))
    np.testing.assert_allclose(full.blocking_per_type, kaufman_roberts(C, b, a), rtol=1e-9)
    sol = admission_lp(rates, to, moves, eps=0.0)
    assert sol.admit.shape == rates.shape
    assert sol.blocking <= full.blocking + 1e-9


def test_chain_observations_are_what_the_controller_sees():
    """Every decision of a simulated two-type cell with CQI bands: the observation equals the
    one chain_observations gives for the chain state and stream the engine is in."""
    from envs import Driver, NetworkSpec
    from envs.systems.cell.chain import cell_chain, chain_observations

    spec = NetworkSpec.from_dict({"name": "two", "eps": 0.05, "cell": {"prbs": 6, "drop": "grown", "cqi_bands": [9],
                                  "types": [
        {"name": "ue", "arrival": {"dist": "poisson", "rate": 3.0}, "session": {"dist": "exponential", "mean": 1.0},
         "gbr": 0.4, "cqi": {"up": 1.0, "down": 1.0, "range": [8, 9], "init": [0] * 7 + [0.5, 0.5] + [0] * 6}},
        {"name": "voice", "arrival": {"dist": "poisson", "rate": 2.0}, "session": {"dist": "exponential", "mean": 1.0},
         "prbs": 1, "cqi": {"init": 9, "range": [9, 9]}}]}})
    chain = cell_chain(spec.block)
    driver = Driver(spec, 16, seed=1)
    table = chain_observations(chain, spec.block, driver.encoding.cell_layout())
    index = {s: i for i, s in enumerate(chain.states)}
    eng, obs, rng = driver.engine, driver.observe(), np.random.default_rng(0)
    for _ in range(200):
        st, every = eng.state, np.arange(16)
        for b in every:
            live = st.cell_job[b] >= 0
            counts = tuple(int((live & (st.cell_type[b] == k) & (st.cell_cqi[b] == c)).sum()) for k, c in chain.slots)
            stream = chain.streams.index((int(eng.jobs.job_class[b, eng.slot[b]]), int(eng.jobs.cqi0[b, eng.slot[b]])))
            np.testing.assert_array_equal(obs[b], table[index[counts], stream])
        obs, _ = driver.step((rng.random(16) < 0.7).astype(np.int64))
