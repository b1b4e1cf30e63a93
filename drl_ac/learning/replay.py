"""Uniform replay of completed experiences, as torch tensors on the training device.

It keeps outcomes (action, success, cost), not rewards: the reward is computed from the
current multiplier when a batch is drawn, so a change of lam applies to all experience.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from drl_ac.learning.store import Experiences

FIELDS = Experiences._fields


class Batch(NamedTuple):
    obs: torch.Tensor
    action: torch.Tensor
    next_obs: torch.Tensor
    greedy: torch.Tensor
    success: torch.Tensor
    cost: torch.Tensor


def compact(t: torch.Tensor) -> torch.Tensor:
    """``t`` in the narrowest integer type that holds every value exactly (observations are
    mostly counts of jobs), else as it is; ``load_state_dict`` casts it back on assignment."""
    if t.is_floating_point() and t.numel() and bool((t == t.round()).all()):
        for dtype in (torch.uint8, torch.int16, torch.int32):
            info = torch.iinfo(dtype)
            if info.min <= float(t.min()) and float(t.max()) <= info.max:
                return t.to(dtype)
    return t


class ReplayBuffer:
    def __init__(self, capacity: int, obs_dim: int, device: torch.device, seed: int = 0):
        self.capacity = int(capacity)
        self.device = device
        self.obs = torch.zeros((capacity, obs_dim), device=device)
        self.next_obs = torch.zeros((capacity, obs_dim), device=device)
        self.action = torch.zeros(capacity, dtype=torch.long, device=device)
        self.greedy = torch.zeros(capacity, dtype=torch.bool, device=device)
        self.success = torch.zeros(capacity, dtype=torch.bool, device=device)
        self.cost = torch.zeros(capacity, device=device)
        self.size = 0
        self.pos = 0
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)

    def __len__(self) -> int:
        return self.size

    def add(self, exp: Experiences) -> None:
        m = len(exp.action)
        if m == 0:
            return
        if m > self.capacity:  # keep the newest
            exp = Experiences(*(v[-self.capacity:] for v in exp))
            m = self.capacity
        idx = torch.arange(self.pos, self.pos + m, device=self.device) % self.capacity
        for name in FIELDS:
            buf = getattr(self, name)
            buf[idx] = torch.as_tensor(np.asarray(getattr(exp, name)), device=self.device).to(buf.dtype)
        self.pos = (self.pos + m) % self.capacity
        self.size = min(self.size + m, self.capacity)

    def sample(self, batch_size: int) -> Batch:
        idx = torch.randint(0, self.size, (batch_size,), device=self.device, generator=self.generator)
        return Batch(*(getattr(self, name)[idx] for name in FIELDS))

    def state_dict(self) -> dict:
        """The filled rows, observations compacted losslessly (``compact``): queue lengths
        below 256 take a quarter of their float32 size."""
        n = self.size
        return {"size": n, "pos": self.pos, "rng": self.generator.get_state(),
                **{name: compact(getattr(self, name)[:n].cpu()) for name in FIELDS}}

    def load_state_dict(self, state: dict) -> None:
        n = int(state["size"])
        for name in FIELDS:
            getattr(self, name)[:n] = state[name].to(self.device)
        self.size, self.pos = n, int(state["pos"])
        self.generator.set_state(state["rng"])
