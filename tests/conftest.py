import pytest
import torch

from envs import NetworkSpec
from envs.distributions import Deterministic

torch.set_num_threads(1)  # the tests run many tiny batches: threads only add contention


@pytest.fixture
def overtaking_spec():
    """Two stations: s1 has 2 servers (so jobs overtake), s2 has 1; arrivals every 1.0."""
    return NetworkSpec.tandem([2, 1], [Deterministic(1.0), Deterministic(2.0)], Deterministic(1.0),
                              d_ub=5.0, eps=0.1, lam=1.0)

