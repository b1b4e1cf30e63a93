"""The cell kind (envs/systems/cell/station.py) against exact loss-system results: Erlang B (also with
lognormal sessions: insensitivity), Kaufman-Roberts and the guard channel, each within 4
standard errors (instances as independent clusters); spec errors name their field."""

import numpy as np
import pytest

from drl_ac.evaluation.metrics import ratio_estimate
from envs import Driver, NetworkSpec, Outcomes, SpecError, load_spec
from envs.rollout import accept_all, collect
from envs.systems.cell.theory import erlang_b, guard_channel, kaufman_roberts

Z = 4.0


def _blocking(done, mask, num_envs):
    """P(blocked) over the rows of ``mask`` and its standard error (clusters = instances)."""
    num = np.bincount(done.env[mask], weights=done.measures["blocked"][mask].astype(float), minlength=num_envs)
    den = np.bincount(done.env[mask], minlength=num_envs).astype(float)
    return ratio_estimate(num, den)


def _run(spec, policy=accept_all, num_envs=256, steps=400, warmup=100, seed=1):
    driver = Driver(spec, num_envs, seed=seed)
    done, _ = collect(driver, policy, steps, warmup)
    return done


def _close(est, se, truth, label):
    assert abs(est - truth) < Z * se, f"{label}: simulated {est:.5f} +- {se:.5f}, exact {truth:.6f}"


def cell_spec(session, types=None, prbs=10, **extra):
    types = types or [{"name": "ue", "arrival": {"dist": "poisson", "rate": 7.0}, "session": session, "prbs": 1}]
    return NetworkSpec.from_dict({"name": "c", "cell": {"prbs": prbs, "types": types, **extra}, "eps": 0.02})


def test_exact_values_quoted_in_the_scenarios():
    assert erlang_b(10, 7.0) == pytest.approx(0.078741, abs=1e-6)
    assert kaufman_roberts(10, [1, 2], [4.0, 1.0]) == pytest.approx([0.049689, 0.123262], abs=1e-6)
    assert guard_channel(10, 2, 6.0, 2.0) == pytest.approx((0.280752, 0.009851), abs=1e-6)
    assert guard_channel(10, 0, 6.0, 2.0)[0] == pytest.approx(0.121661, abs=1e-6)


@pytest.mark.parametrize("session", [{"dist": "lognormal", "mean": 1.0, "scv": 2.0},
                                     {"dist": "exponential", "mean": 1.0}], ids=["lognormal", "exponential"])
def test_erlang_b(session):
    spec = load_spec("cell_erlang") if session["dist"] == "lognormal" else cell_spec(session)
    done = _run(spec)
    est, se = _blocking(done, np.ones(len(done), bool), 256)
    _close(est, se, erlang_b(10, 7.0), f"Erlang B, {session['dist']} sessions")
    assert not done.measures["dropped"].any() and (done.success == ~done.measures["blocked"]).all()
    kept = ~done.measures["blocked"]
    assert np.allclose(done.delay[kept], done.measures["session"][kept])  # delay = time held = the session


def test_kaufman_roberts():
    done = _run(load_spec("cell_multirate"))
    truth = kaufman_roberts(10, [1, 2], [4.0, 1.0])
    for k in (0, 1):
        est, se = _blocking(done, done.measures["type"] == k, 256)
        _close(est, se, truth[k], f"Kaufman-Roberts type {k}")


@pytest.mark.parametrize("g", [2, 0])
def test_guard_channel(g):
    spec = load_spec("cell_guard")

    def guard(obs):  # obs: UEs, PRBs in use, demand
        return (obs[:, 1] < 10 - g).astype(np.int64)

    done = _run(spec, guard)
    new, hand = _blocking(done, done.decision, 256), _blocking(done, done.measures["handover"], 256)
    exact = guard_channel(10, g, 6.0, 2.0)
    _close(*new, exact[0], f"new-call blocking, g = {g}")
    _close(*hand, exact[1], f"handover dropping, g = {g}")
    assert (done.decision == ~done.measures["handover"]).all() and done.measures["handover"].any()


def test_handover_rows_never_reach_the_learner():
    from drl_ac.learning.interaction import act
    from drl_ac.learning.store import DelayedCompletionStore

    driver = Driver(load_spec("cell_guard"), 16, seed=3)
    store = DelayedCompletionStore(16, driver.encoding.width)
    store.put_obs(0, driver.observe())
    completed = 0
    for t in range(300):
        action = np.ones(16, np.int64)
        _, exp = act(driver, store, t, action, action)
        completed += exp.success.size
    assert completed + store.pending_count() == 300 * 16  # every decision once, no handover row


@pytest.mark.parametrize("change, field", [
    ({"drop": "newest"}, "cell.drop"),
    ({"prbs": 0}, "cell.prbs"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 11}]}, "cell.types[0].prbs"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 20.0}]}, "cell.types[0].gbr"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": -1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 1}]}, "cell.types[0].arrival.rate"),
    ({"types": [{"arrival": {"dist": "poisson", "profile": {"period": 24, "table": [1, -2]}},
                 "session": {"dist": "exponential", "mean": 1}, "prbs": 1}]}, "cell.types[0].arrival.profile.table[1]"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 0.5, "cqi": {"init": 16}}]}, "cell.types[0].cqi.init"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 0.5, "cqi": {"range": [0, 9]}}]}, "cell.types[0].cqi.range[0]"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "gbr": 0.5, "cqi": {"up": 0}}]}, "cell.types[0].cqi.up"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 1, "handover": {"dist": "poisson", "rate": 0}}]}, "cell.types[0].handover.rate"),
    ({"types": [{"arrival": {"dist": "poisson", "rate": 1}, "session": {"dist": "exponential", "mean": 1},
                 "prbs": 1, "colour": 2}]}, "cell.types[0].colour"),
])
def test_bad_cells_name_the_field(change, field):
    cfg = {"name": "c", "cell": {"prbs": 10, "types": [{"arrival": {"dist": "poisson", "rate": 1},
                                                       "session": {"dist": "exponential", "mean": 1}, "prbs": 1}]},
           "eps": 0.02}
    cfg["cell"].update(change)
    with pytest.raises(SpecError) as err:
        NetworkSpec.from_dict(cfg)
    assert err.value.field == field, str(err.value)


def test_cell_spec_round_trip():
    for name in ("cell_erlang", "cell_multirate", "cell_guard"):
        spec = load_spec(name)
        again = NetworkSpec.from_dict(spec.to_dict())
        assert again.block == spec.block and again.classes == spec.classes


# ---------------------------------------------------------------------- channel (CQI) and drops
def test_prbs_for_rate_follows_38_214_table():
    from envs.systems.cell.spec import CQI_EFFICIENCY, RE_PER_PRB_PER_S, prbs_for_rate

    assert RE_PER_PRB_PER_S == 168_000 and len(CQI_EFFICIENCY) == 15
    assert CQI_EFFICIENCY[0] == 0.1523 and CQI_EFFICIENCY[6] == 1.4766 and CQI_EFFICIENCY[14] == 5.5547
    assert prbs_for_rate(1.0, 7) == 5  # 1e6 / (168e3 * 1.4766) = 4.03
    assert prbs_for_rate(0.7, 7) == 3 and prbs_for_rate(0.7, 6) == 4  # 2.82, 3.54
    assert list(prbs_for_rate(0.5, np.arange(1, 16))) == [20, 13, 8, 5, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1]
    assert prbs_for_rate(0.168 * 2.4063 * 3, 9) == 3  # an exact multiple is not rounded up


def _trace_engine(drop, video_priority=1):
    """C = 10; video: 0.7 Mbit/s on CQI 6..7 (3 PRBs at 7, 4 at 6), starts at 7; data: 3 PRBs.
    Arrivals: video at 1, 2, 3, 4...; data at 1.6, 3.2, ... Sessions last 100."""
    from envs import Engine

    slow = {"up": 1e-9, "down": 1e-9, "init": 7, "range": [6, 7]}
    spec = NetworkSpec.from_dict({"name": "trace", "eps": 0.02, "cell": {"prbs": 10, "drop": drop, "types": [
        {"name": "video", "arrival": {"dist": "deterministic", "mean": 1.0}, "gbr": 0.7, "cqi": slow,
         "session": {"dist": "deterministic", "mean": 100.0}, "priority": video_priority},
        {"name": "data", "arrival": {"dist": "deterministic", "mean": 1.6}, "prbs": 3,
         "session": {"dist": "deterministic", "mean": 100.0}, "priority": 0}]}})
    eng = Engine(spec, 1, seed=0)
    for _ in range(3):  # video@1, data@1.6, video@2: 3 + 3 + 3 = 9 PRBs
        assert len(eng.step(np.ones(1, np.int64))) == 0
    st, kind = eng.state, eng.kinds[0]
    assert eng.now[0] == 3.0 and st.cell_used[0] == 9 and list(st.cell_ues[0]) == [2, 1]
    video = np.flatnonzero((st.cell_job[0] >= 0) & (st.cell_type[0] == 0))
    for s, at in zip(video, (3.05, 3.1), strict=True):  # both videos drop from CQI 7 to 6 (the only way)
        st.cell_next[0, s] = at
        st.next_event[0, kind.offset + s] = at  # a small cell: a column per session
    assert not kind.bulk
    return eng


@pytest.mark.parametrize("drop, video_priority, victim", [("grown", 1, "video@2"), ("lowest_priority", 1, "data@1.6"),
                                                          ("lowest_priority", 0, "video@2")])
def test_hand_trace_of_a_cqi_drop(drop, video_priority, victim):
    """video@1 grows to 4 PRBs at 3.05 (10 in use: fits); video@2 grows at 3.1 (11 > 10): 'grown'
    drops video@2; 'lowest_priority' drops data@1.6 (priority 0 < 1), or, all priorities equal,
    the grown video@2 first. The video arriving at 3 is rejected: it would not fit (9 + 3)."""
    eng = _trace_engine(drop, video_priority)
    done = eng.step(np.zeros(1, np.int64))  # reject video@3, run to data@3.2
    assert eng.now[0] == 3.2
    probe = done.select(done.step == 3)
    assert probe.measures["blocked"].all() and not probe.success.any() and not probe.accepted.any()
    drops = done.select(done.measures["dropped"])
    assert len(drops) == 1 and drops.departure_time[0] == 3.1 and not drops.success[0] and drops.accepted[0]
    arrived = {"video@2": 2.0, "data@1.6": 1.6}[victim]
    assert drops.arrival_time[0] == arrived and drops.delay[0] == pytest.approx(3.1 - arrived)
    st = eng.state
    used = {"video@2": 4 + 3, "data@1.6": 4 + 4}[victim]
    assert st.cell_used[0] == used == st.cell_demand[0][st.cell_job[0] >= 0].sum()
    assert sorted(st.cell_cqi[0][(st.cell_job[0] >= 0) & (st.cell_type[0] == 0)]) == [6] * (2 if victim[0] == "d" else 1)


@pytest.mark.parametrize("admit", [0, 1])
def test_charges_of_a_step_count_the_block_and_the_drop(admit):
    """The hand trace under 'grown': the video arriving at 3 is blocked (rejected, or admitted
    without room), and video@2 is dropped in the step: what the learner is paid for."""
    from envs.reward import cell_charges

    eng = _trace_engine("grown", 1)
    done = eng.step(np.full(1, admit, np.int64))
    carried, drops = cell_charges(done, np.full(1, admit, np.int64), 3)
    assert carried.tolist() == [False] and drops.tolist() == [1]


def test_cqi_process_is_the_birth_death_chain():
    """CQI 5..8, up 2, down 1, started from the stationary law pi_c ~ 2^(c-5): every UE's CQI is
    stationary at every time, so the UEs per CQI seen by arrivals (PASTA) follow pi."""
    pi = 2.0 ** np.arange(4) / 15
    spec = NetworkSpec.from_dict({"name": "cqi", "eps": 0.02, "cell": {"prbs": 1000, "cqi_bands": [6, 7, 8], "types": [
        {"name": "ue", "arrival": {"dist": "poisson", "rate": 5.0}, "session": {"dist": "exponential", "mean": 1.0},
         "gbr": 0.5, "cqi": {"up": 2.0, "down": 1.0, "range": [5, 8], "init": [0] * 4 + list(pi) + [0] * 7}}]}})
    driver = Driver(spec, 128, seed=2)
    assert driver.encoding.width == 3 + 4
    counts = np.zeros((128, 4))
    obs = driver.observe()
    for t in range(400):
        if t >= 50:
            counts += obs[:, 3:]
        obs, _ = driver.step(np.ones(128, np.int64))
    assert (obs[:, 0] == obs[:, 3:].sum(1)).all()
    frac = counts / counts.sum(1, keepdims=True)
    for c in range(4):
        est, se = frac[:, c].mean(), frac[:, c].std(ddof=1) / np.sqrt(128)
        _close(est, se, pi[c], f"P(CQI = {c + 5})")
    moves = driver.engine.state.cell_moves[driver.engine.state.cell_job >= 0]
    assert moves.mean() > 0.5  # the channel does move (mean time in a session: up to 3 moves per unit)


# ---------------------------------------------------------------------- probe
def _busy_cell(drop):
    return NetworkSpec.from_dict({"name": "busy", "eps": 0.02, "cell": {"prbs": 20, "drop": drop, "types": [
        {"name": "video", "arrival": {"dist": "poisson", "rate": 3.0}, "session": {"dist": "lognormal", "mean": 1.5,
                                                                                    "scv": 1.5},
         "gbr": 1.0, "cqi": {"up": 3.0, "down": 3.0, "range": [4, 10]}, "priority": 2,
         "handover": {"dist": "poisson", "rate": 0.5}},
        {"name": "voice", "arrival": {"dist": "poisson", "rate": 3.0}, "session": {"dist": "exponential", "mean": 1.0},
         "prbs": 1, "priority": 1, "handover": {"dist": "poisson", "rate": 1.0}}]}})


@pytest.mark.parametrize("drop, video_priority", [("grown", 2), ("lowest_priority", 2), ("lowest_priority", 0)])
def test_bulk_session_events_equal_one_at_a_time(drop, video_priority, monkeypatch):
    """A row takes its sessions' CQI moves, ends and drops in bulk (``CellKind._bulk``): the
    UE that grew (``grown``; ``lowest_priority`` when video, the type whose demand moves, has
    the lowest priority), or the latest voice UEs present (``lowest_priority`` otherwise,
    several at once where one does not free enough). The same keys taken one event at a
    time (``_move``) give the same run: every outcome and the channels of the UEs present,
    bit for bit (no handovers: their draws would come in another order). Busy enough that
    drops and probes are exercised."""
    from envs import Engine
    from envs.systems.cell import station as cell_kind
    from envs.systems.cell.station import CellKind

    spec = _busy_cell(drop)
    raw = spec.to_dict()
    for t in raw["cell"]["types"]:
        del t["handover"]
    raw["cell"]["types"][0]["priority"] = video_priority
    raw["cell"]["cqi_bands"] = [6, 8]  # UEs per (type, band): counted as channels move
    spec = NetworkSpec.from_dict(raw)
    runs, moves = [], []
    exact_move = CellKind._move

    def counted(self, eng, st, p, rows, s, q, when, out):
        moves.append(rows.size)
        return exact_move(self, eng, st, p, rows, s, q, when, out)

    monkeypatch.setattr(CellKind, "_move", counted)
    for mode in ("bulk", "one"):
        monkeypatch.setattr(cell_kind, "_BULK_SESSIONS", 1 if mode == "bulk" else 1 << 30)
        eng, rng, rows = Engine(spec, 128, seed=7), np.random.default_rng(0), []
        assert eng.kinds[0].bulk == (mode == "bulk")
        for _ in range(150):
            rows.append(eng.step((rng.random(128) < 0.8).astype(np.int64)))
        st = eng.state
        live = st.cell_job >= 0
        for k in range(2):  # the bands' counts against a count of the sessions present
            for band, (lo, hi) in enumerate([(1, 6), (6, 8), (8, 16)]):
                count = (live & (st.cell_type == k) & (st.cell_cqi >= lo) & (st.cell_cqi < hi)).sum(1)
                assert np.array_equal(st.cell_bands[:, 3 * k + band], count)
        assert st.cell_bands.sum() > 100
        r, s = np.nonzero(live)  # the UEs present, by instance and arrival (slots may differ), and their channels
        order = np.lexsort((st.cell_start[r, s], r))
        present = np.stack([r, st.cell_start[r, s], st.cell_cqi[r, s], st.cell_moves[r, s]])[:, order]
        rows.append(eng.drain())
        assert not eng.state.cell_bands.any()
        done = Outcomes.concat(rows, 1)
        order = np.lexsort((done.departure_time, done.step, done.env))
        runs.append((done, order, present))
        if mode == "bulk":
            in_bulk, moves = sum(moves), []
    (a, oa, sa), (b, ob, sb) = runs
    for name in ("env", "step", "success", "accepted", "departure_time", "delay"):
        assert np.array_equal(getattr(a, name)[oa], getattr(b, name)[ob]), name
    assert np.array_equal(a.measures["dropped"][oa], b.measures["dropped"][ob]) and a.measures["dropped"].sum() >= 20
    assert np.array_equal(sa, sb) and sa[3].sum() > 100  # the same UEs on the same channels, as many moves
    assert in_bulk == 0 and sum(moves) > 1000  # in bulk, no move went one at a time
    if drop == "lowest_priority" and video_priority > 1:  # some moves dropped several voice UEs at once
        d = a.measures["dropped"]
        _, count = np.unique(np.stack([a.env[d], a.departure_time[d]]), axis=1, return_counts=True)
        assert count.max() >= 2


@pytest.mark.parametrize("drop", ["grown", "lowest_priority"])
def test_probe_is_exact(drop):
    """The probe's outcome for the UE arriving now equals what happens to it when it is
    admitted in a copy of the cell run with no further arrivals (handovers included); the
    real cell and its random stream are untouched."""
    from envs import Engine

    spec, B = _busy_cell(drop), 1024  # enough instances for drops under either rule
    eng = Engine(spec, B, seed=5)
    rng = np.random.default_rng(0)
    for _ in range(60):
        eng.step((rng.random(B) < 0.8).astype(np.int64))
    before = eng.get_state()
    probe = eng.counterfactual(np.arange(B))
    after = eng.get_state()
    assert after["rng"] == before["rng"]
    for k, v in before["dynamics"].items():
        assert np.array_equal(v, after["dynamics"][k]), k
    twin = Engine(spec, B, seed=99)
    twin.set_state(before)
    every = np.arange(B)
    slot = twin.jobs.take(every)
    twin.jobs.action[every, slot] = 1
    twin.insert(twin.state, every, every, np.ones(B, np.int64))
    done = twin.drain()
    real = done.select((done.step == eng.t) & done.decision)
    real = real.select(np.argsort(real.env))
    assert np.array_equal(real.env, every)
    assert np.array_equal(probe.success, real.success)
    assert np.array_equal(probe.departure_time, real.departure_time)
    assert np.array_equal(probe.delay, real.delay)
    fits = ~real.measures["blocked"]
    assert probe.measures["blocked"].all() and not probe.accepted.any()
    assert real.measures["dropped"].sum() >= 5 and fits.sum() >= B // 4  # the check has teeth: drops happen
    assert (probe.success == (fits & ~real.measures["dropped"])).all()
    voice_dropped = (real.measures["dropped"] & (real.measures["type"] == 1)).any()
    assert voice_dropped == (drop == "lowest_priority")  # voice (fixed PRBs) only falls to others' growth


def test_without_probes_the_run_is_the_same_and_blocks_are_unscored():
    """probes=False changes nothing but the blocked rows' score: same real run, same random
    stream; a blocked UE is reported at once as not finished."""
    from envs import Engine

    spec, B = _busy_cell("lowest_priority"), 64
    runs = []
    for probes in (True, False):
        eng, rng, rows = Engine(spec, B, seed=5, probes=probes), np.random.default_rng(0), []
        for _ in range(80):
            rows.append(eng.step((rng.random(B) < 0.7).astype(np.int64)))
        runs.append((Outcomes.concat(rows, 1), eng.get_state()["rng"]))
    (scored, rng_on), (unscored, rng_off) = runs
    assert rng_on == rng_off and len(scored) == len(unscored)
    probed = scored.action == 0
    for name in ("env", "step", "accepted", "arrival_time", "job_class"):
        assert np.array_equal(getattr(scored, name), getattr(unscored, name)), name
    assert np.array_equal(scored.success[~probed], unscored.success[~probed])
    assert scored.success[probed].any() and not unscored.success[probed].any()
    assert (unscored.departure_time[probed] == unscored.arrival_time[probed]).all()


# ---------------------------------------------------------------------- small cell vs its CTMC, observation
def test_cell_small_matches_its_ctmc():
    """Accept-all on cell_small: blocking and P(dropped | carried) equal the CTMC's
    (envs.systems.cell.chain), which also feeds the exact admission LP."""
    from envs.systems.cell.chain import cell_chain
    from envs.systems.cell.theory import admission_lp, evaluate_admission_policy

    spec = load_spec("cell_small")
    chain = cell_chain(spec.block)
    assert len(chain.states) == 16 and chain.streams == [(0, 8), (0, 9)]
    exact = evaluate_admission_policy(chain.request_rates, chain.admit_to, chain.transitions,
                                      np.ones_like(chain.request_rates))
    done = _run(spec, num_envs=256, steps=300)
    blocked, dropped = done.measures["blocked"], done.measures["dropped"]
    per = lambda v: np.bincount(done.env, weights=v.astype(float), minlength=256)  # noqa: E731
    _close(*ratio_estimate(per(blocked), per(np.ones(len(done)))), exact.blocking, "blocking")
    _close(*ratio_estimate(per(dropped), per(~blocked)), exact.dropping, "P(dropped | carried)")
    best = admission_lp(chain.request_rates, chain.admit_to, chain.transitions, spec.eps)
    assert best.dropping <= spec.eps + 1e-9 and exact.blocking < best.blocking < 1


def test_cell_5g_observation():
    from envs.systems.cell.spec import prbs_for_rate

    spec = load_spec("cell_5g")
    assert spec.block.prbs == 106 and len(spec.block.types) == 3 and spec.period == 1440 and spec.eps == 0.02
    driver = Driver(spec, 32, seed=0)
    enc = driver.encoding
    assert enc.width == 19 == enc.scale(spec).size
    rng = np.random.default_rng(1)
    obs = driver.observe()
    for _ in range(300):
        obs, done = driver.step((rng.random(32) < 0.9).astype(np.int64))
    eng, st = driver.engine, driver.engine.state
    live = st.cell_job >= 0
    assert (obs[:, :3] == np.stack([(live & (st.cell_type == k)).sum(1) for k in range(3)], 1)).all()
    assert (obs[:, 3] == (st.cell_demand * live).sum(1)).all()
    assert (obs[:, 4:7] == np.eye(3)[eng.arriving]).all()
    every = np.arange(32)
    gbr = np.array([t.gbr for t in spec.block.types])[eng.arriving]
    assert (obs[:, 7] == prbs_for_rate(gbr, eng.jobs.cqi0[every, eng.slot])).all()
    angle = 2 * np.pi * eng.now / 1440
    assert np.allclose(obs[:, 8:10], 1 + np.stack([np.sin(angle), np.cos(angle)], 1), atol=1e-5)
    bands = obs[:, 10:].reshape(32, 3, 3)
    assert (bands.sum(2) == obs[:, :3]).all() and (obs >= 0).all()
    assert set(done.info()) >= {"env", "step", "accepted", "delay", "action", "success", "blocked", "dropped",
                                "type", "handover", "session"}
