"""The replay's saved state: the filled rows only, observations compacted without loss."""

import numpy as np
import torch

from drl_ac.learning.replay import ReplayBuffer, compact
from drl_ac.learning.store import Experiences


def experiences(obs: np.ndarray) -> Experiences:
    m = obs.shape[0]
    return Experiences(obs=obs, action=np.arange(m) % 2, next_obs=obs + 1, greedy=np.ones(m, bool),
                       success=np.arange(m) % 3 == 0, cost=np.linspace(0.0, 1.0, m))


def test_counts_are_stored_as_the_narrowest_integer_type_and_come_back_exactly():
    counts = torch.tensor([[0.0, 3.0], [70_000.0, 2.0]])
    assert compact(counts[:, 1:]).dtype == torch.uint8
    assert compact(torch.tensor([[-1.0, 3.0]])).dtype == torch.int16  # -1 does not fit uint8
    assert compact(counts).dtype == torch.int32  # 70,000 does not fit int16
    phases = torch.tensor([[0.5, 1.0]])
    assert compact(phases) is phases  # not integral: kept as float
    assert compact(torch.tensor([[40_000.0e6]])).dtype == torch.float32  # beyond int32


def test_a_saved_replay_loads_equal_and_is_about_a_quarter_of_float32(tmp_path):
    rng = np.random.default_rng(0)
    buf = ReplayBuffer(1000, 50, torch.device("cpu"), seed=3)
    buf.add(experiences(rng.integers(0, 200, (600, 50)).astype(np.float32)))
    state = buf.state_dict()
    assert state["obs"].dtype == torch.uint8 and state["obs"].shape == (600, 50)
    torch.save(state, tmp_path / "r.pt")
    back = ReplayBuffer(1000, 50, torch.device("cpu"), seed=0)
    back.load_state_dict(torch.load(tmp_path / "r.pt", weights_only=True))
    assert back.obs.dtype == torch.float32 and len(back) == 600 and back.pos == buf.pos
    for name in ("obs", "next_obs", "action", "greedy", "success", "cost"):
        assert torch.equal(getattr(back, name), getattr(buf, name)), name
    assert torch.equal(back.sample(32).obs, buf.sample(32).obs)  # same generator state, same draws
    float32_bytes = 2 * 600 * 50 * 4
    assert (tmp_path / "r.pt").stat().st_size < 0.35 * float32_bytes
