"""Differential Q-network: queue lengths in, one value per action (0 reject, 1 accept) out."""

from __future__ import annotations

import torch
from torch import nn


class QNetwork(nn.Module):
    """MLP over normalised queue lengths.

    Queue lengths are divided by ``scale`` (per feature, e.g. the station's servers), and
    passed through log1p so that long queues, rare but unbounded, do not saturate the net.
    """

    def __init__(self, obs_dim: int, scale: torch.Tensor | None = None, hidden: tuple[int, ...] = (64, 64)):
        super().__init__()
        self.register_buffer("scale", torch.ones(obs_dim) if scale is None else scale.float().clone())
        layers: list[nn.Module] = []
        width = obs_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, 2))
        self.body = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.body(torch.log1p(obs / self.scale))


class GreedyPolicy(nn.Module):
    """What is exported: observation batch (B, D) -> actions (B,) in {0, 1}.

    Accepts iff Q(s, accept) - Q(s, reject) >= bias; bias 0 is the greedy policy, and a
    calibrated bias moves the operating point along the learned ranking of states.
    """

    def __init__(self, qnet: QNetwork, bias: float = 0.0):
        super().__init__()
        self.qnet = qnet
        self.register_buffer("bias", torch.tensor(float(bias)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        q = self.qnet(obs)
        return (q[:, 1] - q[:, 0] >= self.bias).long()
