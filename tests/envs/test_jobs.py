"""The record tables: slots are unique among live records, memory follows what is held."""

import numpy as np

from envs import Engine, NetworkSpec
from envs.jobs import Column, SlotTable, StepRing


def test_slot_table_hands_out_distinct_slots_and_reuses_freed_ones():
    rng = np.random.default_rng(1)
    table = SlotTable(3, (Column("x"),), capacity=2)
    held: list[set[int]] = [set(), set(), set()]
    most = 0
    for _ in range(2000):
        nxt = table.next_free()
        rows = np.flatnonzero(rng.random(3) < 0.5)
        slots = table.take(rows)
        assert (slots == nxt[rows]).all()
        for r, s in zip(rows, slots, strict=True):
            assert s not in held[r]
            held[r].add(int(s))
        out_r, out_s = [], []
        for r in range(3):
            for s in sorted(held[r]):
                if rng.random() < 0.4:
                    out_r.append(r)
                    out_s.append(s)
                    held[r].discard(s)
        table.release(np.array(out_r, np.int64), np.array(out_s, np.int64))
        most = max(most, *(len(h) for h in held))
        for r in range(3):
            assert set(np.flatnonzero(table.live[r]).tolist()) == held[r]
            assert table.free_count[r] == table.capacity - len(held[r])
    assert table.capacity <= 2 * max(most, 1)  # grows only with the records held at once


def test_clear_keeps_the_named_slot_next():
    table = SlotTable(2, (), capacity=8)
    table.take(np.array([0, 1]))
    table.take(np.array([0, 1]))
    table.clear(np.array([0, 1]), keep=np.array([5, 0]))
    assert table.next_free().tolist() == [5, 0] and not table.live.any()
    assert sorted(table.free[0].tolist()) == list(range(8))


def test_step_ring_moves_live_records_when_it_grows():
    ring = StepRing(1, (Column("v", (), np.int64),), capacity=2)
    for step in range(5):
        slot = ring.claim(step)
        ring.v[0, slot], ring.live[0, slot] = step, step == 0  # step 0 stays pending
    assert ring.capacity == 8 and ring.v[0, 0] == 0 and ring.live[0, 0]


def test_a_long_job_does_not_grow_the_job_table():
    # Two FCFS servers in one station: the first job holds a server for 10^6, the
    # others pass through the second one. The table follows the jobs present at once,
    # however old the first job gets (a ring keyed by step would span all 5000 steps).
    spec = NetworkSpec.from_dict({"arrival": {"dist": "exponential", "rate": 0.5}, "d_ub": 10, "eps": 0.1,
                                  "stations": [{"servers": 2, "service": {"dist": "exponential", "mean": 1.0}}]})
    sim = Engine(spec, 1, seed=0, capacity=4)
    sim.jobs.service[0, sim.slot[0]] = 1e6
    most = 0
    for _ in range(5000):
        sim.step(np.array([1]))
        most = max(most, int(sim.jobs_in_system()[0]))
    assert sim.jobs.live[0].sum() >= 1 and sim.capacity <= 2 * (most + 1) < 5000


def test_a_state_saved_before_a_column_existed_restores_it_with_its_fill():
    old = SlotTable(2, (Column("x"),), capacity=3)
    old.x[1, 2] = 7.0
    old.take(np.array([0, 1]))
    new = SlotTable(2, (Column("x"), Column("front", (), bool, False), Column("v", (2,), np.int64, -1)), capacity=1)
    new.set_state(old.get_state())
    assert new.x[1, 2] == 7.0 and np.array_equal(new.live, old.live)
    assert new.front.shape == (2, 3) and not new.front.any() and new.front.dtype == bool
    assert new.v.shape == (2, 3, 2) and (new.v == -1).all()
