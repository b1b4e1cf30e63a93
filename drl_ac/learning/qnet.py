"""Differential Q-network: observation in, one value per action out, and the greedy rule."""

from __future__ import annotations

import torch
from torch import nn


class QNetwork(nn.Module):
    """MLP over normalised features.

    Features are divided by ``scale`` (per feature, e.g. the station's servers), and passed
    through log1p so that long queues, rare but unbounded, do not saturate the net.
    """

    def __init__(self, obs_dim: int, scale: torch.Tensor | None = None, hidden: tuple[int, ...] = (64, 64),
                 num_actions: int = 2):
        super().__init__()
        self.register_buffer("scale", torch.ones(obs_dim) if scale is None else torch.as_tensor(scale).float().clone())
        layers: list[nn.Module] = []
        width = obs_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, num_actions))
        self.body = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.body(torch.log1p(obs / self.scale))


def greedy(q: torch.Tensor, admission: bool, bias: torch.Tensor | float = 0.0) -> torch.Tensor:
    """Greedy actions from Q-values (B, K).

    Admission (action 0 rejects): the best admitting action if its advantage over
    rejecting is >= ``bias``, else 0; bias 0 is the greedy policy, and a calibrated bias
    moves the operating point along the learned ranking of states. Control: argmax.
    """
    if not admission:
        return q.argmax(1)
    best = q[:, 1:].argmax(1) + 1
    advantage = q.gather(1, best[:, None]).squeeze(1) - q[:, 0]
    return torch.where(advantage >= bias, best, torch.zeros_like(best))


class GreedyPolicy(nn.Module):
    """What is exported: observation batch (B, D) float32 -> actions (B,) int64."""

    def __init__(self, qnet: QNetwork, bias: float = 0.0, admission: bool = True):
        super().__init__()
        self.qnet = qnet
        self.admission = admission
        self.register_buffer("bias", torch.tensor(float(bias)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return greedy(self.qnet(obs), self.admission, self.bias)
