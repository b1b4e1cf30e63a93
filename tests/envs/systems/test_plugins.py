"""The systems as plugins change no run: a scenario stepped with a fixed seed and a fixed
sequence of actions gives the same fingerprint as on main before the move (04d07b5): a
sha256 of everything a user sees (observations and rewards of the vector environment, every
outcome column of the driver, the spec written out, the observation encoding and its scale).

``PYTHONPATH=. python tests/envs/systems/test_plugins.py`` prints the fingerprints."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from envs.outcomes import Outcomes
from envs.spec import load_spec
from envs.vector_env import AdmissionVectorEnv

STEPS, ENVS, SEED = 50, 64, 2024


def _feed(h, a) -> None:
    a = np.ascontiguousarray(np.asarray(a))
    h.update(str(a.dtype).encode() + str(a.shape).encode())
    h.update(a.tobytes())


def _outcomes(h, done: Outcomes) -> None:
    for name in ("env", "step", "action", "accepted", "success", "delay", "sojourn", "arrival_time",
                 "departure_time", "job_class", "work", "copies", "wait", "service"):
        _feed(h, getattr(done, name))
    if done.decision is not None:
        _feed(h, done.decision)
    for key in sorted(done.measures):
        h.update(key.encode())
        _feed(h, done.measures[key])


def fingerprint(scenario: str, include_in_service: bool = False, steps: int = STEPS, envs: int = ENVS,
                seed: int = SEED) -> str:
    spec = load_spec(scenario)
    env = AdmissionVectorEnv(spec, envs, seed=seed, include_in_service=include_in_service)
    h = hashlib.sha256()
    described = {k: v for k, v in spec.to_dict().items() if k != "training"}  # train.py's defaults, not the system
    h.update(json.dumps(described, sort_keys=True, default=str).encode())
    enc = env.driver.encoding
    seen = {k: v for k, v in enc.to_dict().items()
            if not (k in ("candidates", "rate") and not v)}  # added later; 0 or False: absent
    seen.setdefault("cell_bands", -1)  # moved to the cell's own encoding; -1 was "not a cell"
    h.update(json.dumps(seen, sort_keys=True, default=str).encode())
    _feed(h, enc.scale(spec))
    obs, _ = env.reset(seed=seed)
    _feed(h, obs)
    actions = np.random.default_rng(seed + 1).integers(0, spec.num_actions, (steps, envs))
    for t in range(steps):
        obs, reward, _, _, _ = env.step(actions[t])
        _feed(h, obs)
        _feed(h, reward)
    # the outcomes, through the driver (same engine), for a second run from the same seed
    env.reset(seed=seed)
    for t in range(steps):
        _, done = env.driver.step(actions[t])
        _outcomes(h, done)
    return h.hexdigest()


# recorded on main at 04d07b5, before envs/systems existed; redundancy_ps since its observation
# gained the jobs at the arriving job's servers (ObservationEncoding.candidates); pools since its
# scenario gained the two front-of-queue replication actions (the old scenario's print is unchanged)
GOLDEN = {
    ("paper_tandem", False): "09916cf7205551482ee09b77b56975b690dec05fbe2992aedde160c0e3c0de2e",
    ("paper_tandem", True): "4e22b54f123c3892b881b07892f0b4ad220769eec5af53e09ac3ed4d5ec4bdef",
    ("paper_acyclic", False): "046d1d6d7be75470926857010762fd3df151b7cea226a0092064eec376337a82",
    ("mmc_c5_overload", False): "0b58a4ada371cd6f28b77e6ba1fd4084a08de1290f02f8fc48d66f5bff1b532b",
    ("cell_5g", False): "e5f04f9f2baa66895da279d9c4e6e338be47382b8679bab80d4d47d62b6e172e",
    ("cell_small", False): "fac990c0d0a57e317dae25d38d892929c4e287df85205de368836ad0d94eb9cd",
    ("redundancy_ps", False): "af58ad1e4a17ff81dd8896055ac01a2e2209d12de519d8979fd8ab1708779bd4",
    ("redundancy_ps", True): "af58ad1e4a17ff81dd8896055ac01a2e2209d12de519d8979fd8ab1708779bd4",
    ("pools", False): "ae21a78e27499d33c91e86b4799fdc50a14e0ab25f385c38c1b8e6ab3f28947d",
}


@pytest.mark.parametrize(("scenario", "include_in_service"), list(GOLDEN))
def test_same_run_bit_for_bit(scenario, include_in_service):
    assert fingerprint(scenario, include_in_service) == GOLDEN[scenario, include_in_service]


if __name__ == "__main__":
    for scenario, ins in GOLDEN:
        print(f'    ("{scenario}", {ins}): "{fingerprint(scenario, ins)}",')
