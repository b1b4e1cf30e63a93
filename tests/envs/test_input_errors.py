"""Bad inputs to the environments and to the system blocks fail at once, naming the value
given, what is allowed and the fix, instead of being converted or blamed on a field the user
never wrote: nothing lost, nothing silently wrong."""

import copy
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
import yaml

import envs
from envs import NetworkSpec, SpecError
from envs.single_env import AdmissionEnv
from envs.spec import SCENARIO_DIR


def single(scenario: str) -> AdmissionEnv:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scenarios without lam warn
        env = AdmissionEnv(scenario)
    env.reset(seed=0)
    return env


# ---------------------------------------------------------------- the single env's action
@pytest.mark.parametrize("scenario, action, shown", [
    ("paper_tandem", 0.9999, "0.9999 (float)"),  # int() made it 0
    ("paper_tandem", 1.0, "1.0 (float)"),
    ("paper_tandem", "1", "'1' (str)"),  # int() made it 1
    ("paper_tandem", None, "None (NoneType)"),  # a raw TypeError of int()
    ("paper_tandem", [1], "[1] (list)"),
    ("paper_tandem", np.array([1]), "array([1]) (shape (1,), dtype int64)"),
    ("paper_tandem", np.float64(1.0), "(float64)"),
    ("pools", 11.9, "11.9 (float)"),  # int() ran action 11
])
def test_the_single_env_refuses_what_its_action_space_does_not_contain(scenario, action, shown):
    env = single(scenario)
    n = env.action_space.n
    assert not env.action_space.contains(action)
    with pytest.raises(ValueError, match=rf"^action: expected an integer in \[0, {n}\), got .*{re.escape(shown)}\. "
                                         r"Fix: give one action, an integer: 0 \w"):
        env.step(action)


def test_the_single_env_refuses_booleans_and_actions_out_of_range():
    """A boolean is refused though ``Discrete.contains(True)`` holds: the vector env refuses
    a boolean array, and True is no choice's index but a yes."""
    env = single("paper_tandem")
    with pytest.raises(ValueError, match=r"^action: expected an integer in \[0, 2\), got True \(bool\)\. "
                                         r"Fix: give one action, an integer: 0 reject, 1 accept\.$"):
        env.step(True)
    for action in (2, -1, np.int64(2)):
        with pytest.raises(ValueError, match=rf"^action: {action} is not in \[0, 2\)\. Fix: give one action"):
            env.step(action)


def test_the_single_env_takes_numpy_integers_as_plain_ones():
    plain, numpy = single("pools"), single("pools")
    for action in (np.int64(11), np.array(3), np.uint8(0), plain.action_space.sample()):
        assert plain.action_space.contains(action)
        a, b = plain.step(int(action)), numpy.step(action)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]


# ---------------------------------------------------------------- the horizon option
MAKERS = {
    "gymnasium.make": lambda **kw: gym.make("drl_ac/PaperTandem-v0", **kw),
    "make_vector": lambda **kw: envs.make_vector("paper_tandem", 2, **kw),
    "make_vec": lambda **kw: gym.make_vec("drl_ac/PaperTandem-v0", 2, vectorization_mode="vector_entry_point", **kw),
}


@pytest.mark.parametrize("value", [0, -1, 2.5, "3", True])
@pytest.mark.parametrize("maker", MAKERS)
def test_a_horizon_is_a_whole_number_of_steps(maker, value):
    """0, -1 and 2.5 were taken and truncated on every other step (or after 3)."""
    with pytest.raises(SpecError) as err:
        MAKERS[maker](horizon=value)
    assert err.value.field == "horizon"
    assert str(err.value) == (f"horizon: must be an integer >= 1 (the steps before truncation), got {value!r}. "
                              "Fix: give a whole number of steps, e.g. horizon=1000, or leave it out (None) to "
                              "never truncate.")


@pytest.mark.parametrize("value", [0, 2.5])
def test_make_vec_names_max_episode_steps_when_that_is_what_was_given(value):
    with pytest.raises(SpecError, match=rf"^max_episode_steps: must be an integer >= 1 .*got {value}\. "
                                        r"Fix: .*max_episode_steps=1000"):
        MAKERS["make_vec"](max_episode_steps=value)


def test_a_numpy_integer_horizon_is_taken():
    env = envs.make_vector("paper_tandem", 2, horizon=np.int64(2))
    assert env.horizon == 2 and type(env.horizon) is int
    assert [env.step(np.ones(2, int))[3].all() for _ in range(2)] == [False, True]


# ---------------------------------------------------------------- the vector env's actions
@pytest.mark.parametrize("num_envs, actions, message", [
    (1, np.array([-1]), "actions: action -1 at instance 0 is not in [0, 2)."),
    (1, [2], "actions: action 2 at instance 0 is not in [0, 2)."),
    (4, np.array([1, -1, 0, 2]), "actions: actions -1 at instance 1, 2 at instance 3 are not in [0, 2)."),
    (6, np.array([5, 5, 5, 5, 5, 0]), "actions: actions 5 at instance 0, 5 at instance 1, 5 at instance 2 and "
                                      "2 more are not in [0, 2)."),
    (1, -1, "actions: expected an integer array of shape (1,) in [0, 2), got -1 (int)."),
    (4, np.ones(3, int), "actions: expected an integer array of shape (4,) in [0, 2), got array([1, 1, 1]) "
                         "(shape (3,), dtype int64)."),
    (2, None, "actions: expected an integer array of shape (2,) in [0, 2), got None (NoneType)."),
    (2, np.array([0.5, 1.0]), "actions: expected an integer array of shape (2,) in [0, 2), got array([0.5, 1. ]) "
                              "(shape (2,), dtype float64)."),
    (2, np.ones(2, bool), "dtype bool)."),
    (2, [[1], [1, 0]], "actions: expected an integer array of shape (2,) in [0, 2), got [[1], [1, 0]] (list)."),
])
def test_the_vector_env_names_the_actions_it_refuses(num_envs, actions, message):
    env = envs.make_vector("paper_tandem", num_envs)
    with pytest.raises(ValueError) as err:
        env.step(actions)
    assert message in str(err.value)
    assert str(err.value).endswith(" Fix: give one action per instance, an integer: 0 reject, 1 accept.")


def test_a_bad_action_is_refused_on_the_step_that_resets_too():
    """After a truncation the next step resets and ignores the actions; wrong ones still fail."""
    env = envs.make_vector("paper_tandem", 2, horizon=1)
    assert env.step(np.ones(2, int))[3].all()
    with pytest.raises(ValueError, match=r"actions 5 at instance 0, 5 at instance 1 are not in \[0, 2\)"):
        env.step(np.array([5, 5]))


# ---------------------------------------------------------------- system blocks
REDUNDANCY = {"arrival": {"dist": "exponential", "rate": 1.0}, "d_ub": 10, "eps": 0.1,
              "redundancy": {"servers": 4, "kind": "ps", "size": {"dist": "exponential", "mean": 1.0}, "d": [1, 2]}}
POOLS = yaml.safe_load((SCENARIO_DIR / "pools.yaml").read_text())
NETWORK = {"arrival": {"dist": "exponential", "rate": 0.5}, "d_ub": 5, "eps": 0.1,
           "stations": [{"name": "a", "servers": 2, "service": {"dist": "exponential", "mean": 1.0}}]}


def bad(base: dict, block: str | None, key: str, value) -> dict:
    cfg = copy.deepcopy(base)
    (cfg[block] if block else cfg)[key] = value
    return cfg


@pytest.mark.parametrize("cfg, field, message", [
    # the redundancy servers are fcfs or ps: 'cell' was offered, and then blamed on stations[0]
    (bad(REDUNDANCY, "redundancy", "kind", "lifo"), "redundancy.kind",
     "redundancy.kind: 'lifo' is not a kind of redundancy server. Fix: use one of fcfs, ps."),
    (bad(REDUNDANCY, "redundancy", "kind", "cell"), "redundancy.kind",
     "redundancy.kind: 'cell' is not a kind of redundancy server. Fix: use one of fcfs, ps."),
    (bad(REDUNDANCY, "redundancy", "kind", "fcf"), "redundancy.kind",
     "redundancy.kind: 'fcf' is not a kind of redundancy server. Fix: did you mean 'fcfs'? use one of fcfs, ps."),
    # a repeat is named, not the whole list
    (bad(POOLS, "pools", "actions", [*POOLS["pools"]["actions"], {"pool": 2, "policy": "reroute", "tau": 6.0}]),
     "pools.actions[12]", "pools.actions[12]: repeats pools.actions[9] (both are 'pool2-reroute@6'). "
     "Fix: list each (pool, policy, tau, queue, preempt) once."),
    (bad(REDUNDANCY, "redundancy", "d", [1, 2, 2]), "redundancy.d[2]",
     "redundancy.d[2]: repeats redundancy.d[1] (both are 2). Fix: give the replication degrees"),
    (bad(NETWORK, None, "actions", ["reject", "accept", "accept"]), "actions[2]",
     "actions[2]: repeats actions[1] (both are 'accept'). Fix: list each choice once."),
    # a network's stations are fcfs or ps as well
    (bad(NETWORK, None, "stations", [{**NETWORK["stations"][0], "kind": "lifo"}]), "stations[0].kind",
     "stations[0].kind: unknown station kind 'lifo'. Fix: use one of fcfs, ps."),
    (bad(NETWORK, None, "stations", [{**NETWORK["stations"][0], "kind": 3}]), "stations[0].kind",
     "stations[0].kind: expected a station kind, got 3. Fix: use one of fcfs, ps."),
])
def test_block_errors_blame_the_field_written_and_list_what_it_takes(cfg, field, message):
    with pytest.raises(SpecError) as err:
        NetworkSpec.from_dict(cfg)
    assert err.value.field == field
    assert str(err.value).startswith(message)


def test_a_station_of_a_systems_own_kind_names_the_block_to_write_instead():
    """A network station of kind ``cell`` (a kind only the cell system has) is refused naming the
    system's block, found from the registry; an unknown kind still gets the list of kinds."""
    net = {"name": "n", "arrival": {"dist": "exponential", "rate": 0.5}, "d_ub": 10, "eps": 0.1,
           "stations": [{"name": "s", "service": {"dist": "exponential", "mean": 1.0}, "kind": "cell"}]}
    with pytest.raises(SpecError, match=r"^stations\[0\]\.kind: a cell is described by a 'cell:' block, not a "
                                        r"station\. Fix: write the cell as a top-level 'cell:' block"):
        NetworkSpec.from_dict(net)
    net["stations"][0]["kind"] = "fsfc"
    with pytest.raises(SpecError, match=r"^stations\[0\]\.kind: unknown station kind 'fsfc'\. Fix: use one of fcfs, ps"):
        NetworkSpec.from_dict(net)
