"""Arrival processes: rate profiles, non-homogeneous Poisson, job-class superposition, YAML.

Statistical checks compare against values computed independently of the code under test
(closed forms, scipy quadrature, hand-merged sequences) and allow 4.5 standard errors,
with the SE estimated from instance-level replication.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import yaml
from scipy.integrate import quad

from envs.arrivals import (
    ClassArrivals,
    PoissonProfileArrivals,
    RateProfile,
    RenewalArrivals,
    make_arrivals,
)
from envs.distributions import Deterministic, Exponential, Gamma, HyperExponential
from envs.errors import SpecError

Z = 4.5
TABLE = RateProfile.from_table(4.0, [1.0, 2.5, 0.0, 0.5])
SINE = RateProfile.sinusoid(5.0, base=1.0, amplitude=0.8, phase=0.7)


def _sine_rate(t, base=1.0, a=0.8, period=5.0, phi=0.7):
    return base * (1.0 + a * np.sin(2.0 * np.pi * np.asarray(t) / period + phi))


def _table_rate(t):
    """Independent piecewise lookup of TABLE's rate."""
    s = float(t) % 4.0
    return [1.0, 2.5, 0.0, 0.5][min(int(s // 1.0), 3)]


# --------------------------------------------------------------------------- RateProfile

def test_rate_matches_the_definition():
    k = np.array([-3, -1, 0, 1, 7])[:, None]
    mids = np.array([0.5, 1.5, 2.5, 3.5])[None, :]
    np.testing.assert_array_equal(TABLE.rate(k * 4.0 + mids), np.tile([1.0, 2.5, 0.0, 0.5], (5, 1)))
    t = np.random.default_rng(0).uniform(-20, 60, 200)
    np.testing.assert_allclose(SINE.rate(t), _sine_rate(t), rtol=1e-9, atol=1e-12)
    assert TABLE.max_rate == 2.5 and TABLE.mean_rate == 1.0
    grid = np.linspace(0, 5, 200_001)
    assert SINE.max_rate == pytest.approx(1.8)
    assert _sine_rate(grid).max() == pytest.approx(SINE.max_rate, abs=1e-6)
    assert quad(_sine_rate, 0, 5)[0] / 5 == pytest.approx(SINE.mean_rate, rel=1e-9)


def test_phase_is_the_fraction_of_the_period():
    np.testing.assert_allclose(TABLE.phase(np.array([0.0, 1.0, 5.0, -1.0, 399.0])),
                               [0.0, 0.25, 0.25, 0.75, 0.75])
    p = SINE.phase(np.random.default_rng(1).uniform(-1e4, 1e4, 10_000))
    assert p.min() >= 0.0 and p.max() < 1.0


@pytest.mark.parametrize("profile,rate,breaks", [
    (TABLE, np.vectorize(_table_rate), 1.0),
    (SINE, _sine_rate, None),
])
def test_integrated_matches_quadrature(profile, rate, breaks):
    rng = np.random.default_rng(2)
    t0 = rng.uniform(-10, 30, 25)
    t1 = t0 + rng.uniform(0, 20, 25)
    t1[0] = t0[0]  # empty interval
    got = profile.integrated(t0, t1)
    for a, b, g in zip(t0, t1, got, strict=True):
        pts = None
        if breaks is not None:
            pts = np.arange(math.ceil(a), math.floor(b) + 1) * breaks
            pts = pts[(pts > a) & (pts < b)]
        want = quad(rate, a, b, points=pts if pts is not None and pts.size else None, limit=500)[0]
        assert g == pytest.approx(want, rel=1e-8, abs=1e-9)


# --------------------------------------------------------------------------- NHPP

def _counts_per_phase_bin(proc, profile, B, periods, nbins, seed):
    """Arrivals in [0, periods*P) per instance and per phase bin, shape (B, nbins)."""
    rng = np.random.default_rng(seed)
    period, horizon = profile.period, periods * profile.period
    counts = np.zeros((B, nbins), dtype=np.int64)
    t = np.zeros(B)
    while True:
        t = proc.next_after(rng, t)
        rows = np.flatnonzero(t < horizon)
        if rows.size == 0:
            return counts
        bins = np.minimum((np.mod(t[rows], period) / period * nbins).astype(int), nbins - 1)
        np.add.at(counts, (rows, bins), 1)


@pytest.mark.parametrize("profile,method,nbins", [
    (TABLE, "auto", 8),       # inversion
    (TABLE, "thinning", 8),
    (SINE, "auto", 10),       # thinning
])
def test_nhpp_counts_per_phase_bin_match_the_integrated_rate(profile, method, nbins):
    B, periods = 400, 100
    counts = _counts_per_phase_bin(PoissonProfileArrivals(profile, method), profile, B, periods,
                                   nbins, seed=3)
    edges = np.linspace(0.0, profile.period, nbins + 1)
    expected = profile.integrated(edges[:-1], edges[1:]) * periods  # per instance
    zero = expected < 1e-12
    assert not counts[:, zero].any(), "arrivals during a zero-rate bin"
    mean = counts[:, ~zero].mean(axis=0)
    se = counts[:, ~zero].std(axis=0, ddof=1) / math.sqrt(B)
    z = (mean - expected[~zero]) / se
    assert np.all(np.abs(z) < Z), (mean, expected, z)
    # Poisson counts: variance = mean (index of dispersion 1); Var(s^2/mu) ~ (2 + 1/mu) / B.
    mu = expected[~zero]
    dispersion = counts[:, ~zero].var(axis=0, ddof=1) / mu
    se_disp = math.sqrt(np.sum((2.0 + 1.0 / mu) / B)) / mu.size
    assert abs(dispersion.mean() - 1.0) < Z * se_disp, dispersion


@pytest.mark.parametrize("method", ["inversion", "thinning"])
def test_next_arrival_is_strictly_later_and_skips_zero_rate_time(method):
    proc = PoissonProfileArrivals(RateProfile.from_table(2.0, [1.0, 0.0]), method)
    rng = np.random.default_rng(4)
    now = np.full(5000, 1.2)  # inside the zero-rate half of the period
    nxt = proc.next_after(rng, now)
    assert np.all(nxt >= 2.0)
    now = rng.uniform(0, 100, 5000)
    assert np.all(proc.next_after(rng, now) > now)


def test_mean_rate_and_interarrival():
    proc = PoissonProfileArrivals(SINE)
    assert proc.mean_rate == pytest.approx(1.0) and proc.mean_interarrival == pytest.approx(1.0)
    r = RenewalArrivals(Gamma(2.0, 0.5))
    assert r.mean_rate == pytest.approx(0.5) and r.mean_interarrival == pytest.approx(2.0)


# --------------------------------------------------------------------------- classes

@pytest.mark.parametrize("dist", [Gamma(1.3, 0.7), HyperExponential(2.0, 3.0)])
def test_single_renewal_class_reproduces_the_renewal_sequence(dist):
    B = 7
    arrivals = ClassArrivals([RenewalArrivals(dist)])
    rng, ref = np.random.default_rng(11), np.random.default_rng(11)
    arrivals.reset(rng, B)
    t = dist.sample(ref, B)
    for _ in range(50):
        time, cls = arrivals.pop(rng)
        np.testing.assert_array_equal(time, t)
        np.testing.assert_array_equal(cls, np.zeros(B, dtype=int))
        t = t + dist.sample(ref, B)


def test_yaml_renewal_class_reproduces_the_renewal_sequence():
    proc = make_arrivals(yaml.safe_load("{dist: gamma, rate: 0.95, scv: 0.7}"), "arrival")
    arrivals = ClassArrivals([proc])
    rng, ref = np.random.default_rng(5), np.random.default_rng(5)
    arrivals.reset(rng, 3)
    t = np.zeros(3)
    for _ in range(20):
        t = t + ref.gamma(1 / 0.7, 0.7 / 0.95, 3)
        np.testing.assert_array_equal(arrivals.pop(rng)[0], t)


def test_merge_order_and_ties_go_to_the_lowest_class():
    arrivals = ClassArrivals([Deterministic(1.0), Deterministic(1.5)])
    rng = np.random.default_rng(0)
    arrivals.reset(rng, 2)
    want = sorted([(float(k), 0) for k in range(1, 13)] + [(1.5 * k, 1) for k in range(1, 9)])
    got = [arrivals.pop(rng) for _ in range(16)]
    for (t, c), (gt, gc) in zip(want[:16], got, strict=True):
        np.testing.assert_array_equal(gt, [t, t])
        np.testing.assert_array_equal(gc, [c, c])
    assert want[2:5] == [(2.0, 0), (3.0, 0), (3.0, 1)]  # the tie at 3 is in the list


def test_reset_starts_each_instance_at_its_own_time():
    arrivals = ClassArrivals([Deterministic(1.0), PoissonProfileArrivals(TABLE)])
    start = np.array([0.0, 2.2, 100.0])  # 2.2 lies in TABLE's zero-rate bin [2, 3)
    arrivals.reset(np.random.default_rng(9), 3, start=start)
    nxt = arrivals.get_state()["next_time"]
    np.testing.assert_array_equal(nxt[:, 0], start + 1.0)
    assert np.all(nxt[:, 1] > start) and nxt[1, 1] >= 3.0


def test_superposition_rates_add_and_shares_follow_rate_ratios():
    scv = 0.5
    procs = [RenewalArrivals(Gamma(1 / 0.6, scv)),
             PoissonProfileArrivals(RateProfile.sinusoid(10.0, 0.3, 0.5, 1.0))]
    arrivals = ClassArrivals(procs)
    np.testing.assert_allclose(arrivals.rates, [0.6, 0.3])
    assert arrivals.num_classes == 2 and arrivals.mean_rate == pytest.approx(0.9)
    B, T = 400, 500.0
    rng = np.random.default_rng(6)
    arrivals.reset(rng, B)
    counts = np.zeros((B, 2), dtype=np.int64)
    last = np.zeros(B)
    while True:
        t, c = arrivals.pop(rng)
        assert np.all(t >= last)
        last = t
        rows = np.flatnonzero(t < T)
        if rows.size == 0:
            break
        np.add.at(counts, (rows, c[rows]), 1)
    # Ordinary renewal process from 0: E N(T) = T/m + (scv - 1)/2 + o(1).
    expected = np.array([0.6 * T + (scv - 1) / 2, 0.3 * T])
    se = counts.std(axis=0, ddof=1) / math.sqrt(B)
    assert np.all(np.abs(counts.mean(axis=0) - expected) < Z * se), (counts.mean(axis=0), expected)
    total = counts.sum(axis=1)
    assert abs(total.mean() - expected.sum()) < Z * total.std(ddof=1) / math.sqrt(B)
    share = counts[:, 1] / total
    assert abs(share.mean() - 0.3 / 0.9) < Z * share.std(ddof=1) / math.sqrt(B)


def test_state_round_trip_gives_identical_continuation():
    procs = [RenewalArrivals(Gamma(2.0, 0.6)), PoissonProfileArrivals(SINE),
             PoissonProfileArrivals(TABLE)]
    a = ClassArrivals(procs)
    rng = np.random.default_rng(8)
    a.reset(rng, 16, start=np.linspace(0, 3, 16))
    for _ in range(20):
        a.pop(rng)
    state, rng_state = a.get_state(), rng.bit_generator.state
    assert all(isinstance(v, np.ndarray) for v in state.values())
    saved = {k: v.copy() for k, v in state.items()}
    state["next_time"][:] = -1.0  # get_state must hand out a copy
    first = [a.pop(rng) for _ in range(30)]
    b = ClassArrivals(procs)
    b.set_state(saved)
    saved["next_time"][:] = -1.0  # set_state must keep its own copy
    rng2 = np.random.default_rng()
    rng2.bit_generator.state = rng_state
    second = [b.pop(rng2) for _ in range(30)]
    for (t1, c1), (t2, c2) in zip(first, second, strict=True):
        np.testing.assert_array_equal(t1, t2)
        np.testing.assert_array_equal(c1, c2)
    with pytest.raises(ValueError):
        b.set_state({"next_time": np.zeros((16, 2))})


# --------------------------------------------------------------------------- YAML

def test_yaml_forms():
    table = make_arrivals(yaml.safe_load(
        "{dist: poisson, profile: {period: 24, table: [1.0, 2.5, 0, 0.5]}}"), "arrival")
    assert isinstance(table, PoissonProfileArrivals)
    assert table.profile == RateProfile.from_table(24.0, [1.0, 2.5, 0.0, 0.5])
    assert table.mean_rate == pytest.approx(1.0)
    sine = make_arrivals(yaml.safe_load(
        "{dist: poisson, rate: 0.3, profile: {period: 24, sinusoid: {amplitude: 0.5, phase: 1.2}}}"),
        "arrival")
    assert sine.profile == RateProfile.sinusoid(24.0, 0.3, 0.5, 1.2)
    assert sine.mean_rate == pytest.approx(0.3) and sine.profile.max_rate == pytest.approx(0.45)
    no_phase = make_arrivals({"dist": "poisson", "rate": 2,
                              "profile": {"period": 1, "sinusoid": {"amplitude": 1}}}, "a")
    assert no_phase.profile.phase_shift == 0.0
    assert make_arrivals({"dist": "poisson", "rate": 2.0}, "a") == RenewalArrivals(Exponential(0.5))
    assert make_arrivals({"dist": "gamma", "rate": 0.95, "scv": 0.7}, "a") == \
        RenewalArrivals(Gamma(1 / 0.95, 0.7))


F = "classes[1].arrival"
P = F + ".profile"
NAN, INF = float("nan"), float("inf")


def _table(table, **extra):
    return {"dist": "poisson", "profile": {"period": 24, "table": table, **extra}}


def _sine(amplitude=0.5, rate=0.3, period=24, **extra):
    cfg = {"dist": "poisson", "profile": {"period": period, "sinusoid": {"amplitude": amplitude, **extra}}}
    if rate is not None:
        cfg["rate"] = rate
    return cfg


@pytest.mark.parametrize("cfg,path", [
    (_table([1.0, 2.5, 0.3, -0.5]), P + ".table[3]"),
    (_table([1.0, NAN]), P + ".table[1]"),
    (_table([1.0, INF, 2.0]), P + ".table[1]"),
    (_table([1.0, "x"]), P + ".table[1]"),
    (_table([0, 0.0, 0]), P + ".table"),
    (_table([]), P + ".table"),
    (_table("1 2 3"), P + ".table"),
    ({"dist": "poisson", "profile": {"period": 0, "table": [1.0]}}, P + ".period"),
    ({"dist": "poisson", "profile": {"period": -3, "table": [1.0]}}, P + ".period"),
    ({"dist": "poisson", "profile": {"period": INF, "table": [1.0]}}, P + ".period"),
    ({"dist": "poisson", "profile": {"table": [1.0]}}, P),
    (_sine(period=-1), P + ".period"),
    (_sine(amplitude=1.5), P + ".sinusoid.amplitude"),
    (_sine(amplitude=-0.1), P + ".sinusoid.amplitude"),
    (_sine(amplitude=NAN), P + ".sinusoid.amplitude"),
    (_sine(phase=NAN), P + ".sinusoid.phase"),
    (_sine(freq=2), P + ".sinusoid"),
    ({"dist": "poisson", "rate": 1, "profile": {"period": 24, "sinusoid": {}}}, P + ".sinusoid"),
    (_sine(rate=-0.3), F + ".rate"),
    (_sine(rate=INF), F + ".rate"),
    (_sine(rate=0), F + ".rate"),
    (_sine(rate=None), F),
    (_table([1.0], shape="step"), P),
    ({"dist": "poisson", "profile": {"period": 24, "table": [1.0], "sinusoid": {"amplitude": 0.5}}}, P),
    ({"dist": "poisson", "profile": {"period": 24}}, P),
    ({"dist": "poisson", "profile": [1.0, 2.0]}, P),
    ({**_table([1.0, 2.0]), "rate": 0.5}, F + ".rate"),
    ({**_table([1.0, 2.0]), "mean": 2.0}, F),
    ({**_table([1.0, 2.0]), "dist": "gamma"}, F + ".dist"),
    ({"dist": "gamma", "rate": -1, "scv": 0.5}, F + ".rate"),
    ({"dist": "poisson", "rate": NAN}, F + ".rate"),
])
def test_bad_arrival_specs_name_the_field_and_the_fix(cfg, path):
    with pytest.raises(SpecError, match="^" + re.escape(path) + ": ") as err:
        make_arrivals(cfg, F)
    assert err.value.field == path and err.value.fix
