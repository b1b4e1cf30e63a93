"""Average-reward (differential) Q-learning with a neural network, from replayed experience.

    delta = r - rbar + max_a' Q_target(s', a') - Q(s, a)          (paper eq. 5)
    rbar <- rbar + beta * mean(delta over greedy experiences)     (paper eq. 6)

or, with ``rbar_update="differential"`` (Wan, Naik, Sutton 2021), over all experiences, or,
with ``rbar_update="rvi"`` (relative value iteration: Abounadi, Bertsekas and Borkar 2001),
rbar = the mean target value of a fixed sample of reference states, so that a uniform drift
of the values moves rbar with it and corrects itself: measured on redundancy_ps and pools,
the TD-driven rbar ran away once gradient steps outnumbered vector steps, the loss growing
without bound.
r is the system's reward rule (eq. 7 for admission) computed from the stored outcome with
the *current* multiplier lam.

With a ``base`` rule (a control system's best tuned rule) the learner evaluates that rule
instead of the optimal policy: the bootstrap is Q(s', base(s')) rather than max_a' Q(s', a'),
and rbar is the rule's gain. The network's greedy policy is then one step of policy
improvement over the rule (it beats the rule wherever the estimated advantage is real), and
the targets are those of one fixed, stable policy, not of a moving greedy one that may
pass through unstable regions.

The rbar update evaluates delta with the online network for both Q(s, a) and Q(s', .),
as the paper's tabular rule does. With the lagging target network instead, the offset
between online and target values enters the mean TD error and rbar runs away (measured:
rbar drifted from +0.07 to -0.37 over 2M decisions on paper_tandem while the true gain
was about +0.33).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from drl_ac.learning.qnet import QNetwork, RuleDefault, greedy
from drl_ac.learning.replay import Batch
from envs.reward import RewardRule, admission_reward

RBAR_UPDATES = ("paper", "differential", "rvi")
REFERENCE_STATES = 256  # rvi: the first replay batch's first observations


@dataclass
class LearnerConfig:
    """The Q-network and its updates, one docstring per field (``experiments/train.py``'s flags)."""

    hidden: tuple[int, ...] = (64, 64)
    """hidden layer widths"""
    lr: float = 1e-3
    """Adam learning rate"""
    beta: float = 0.01
    """rbar step size"""
    rbar_update: str = "paper"
    """rbar from greedy experiences (paper), all (differential) or the mean value of reference states (rvi)"""
    batch_size: int = 512
    """replay batch size"""
    grad_clip: float = 10.0
    """largest gradient norm of an update"""
    target_every: int = 200
    """gradient steps between target-network copies"""
    huber_delta: float = 1.0
    """Huber loss threshold, in units of max(1, lam) (so the loss is scale-free in lam)"""

    def __post_init__(self) -> None:
        if self.rbar_update not in RBAR_UPDATES:
            raise ValueError(f"rbar_update: unknown {self.rbar_update!r}. Fix: use one of {', '.join(RBAR_UPDATES)}.")


class DifferentialQLearner:
    def __init__(self, obs_dim: int, scale: torch.Tensor, config: LearnerConfig, device: torch.device,
                 num_actions: int = 2, reward_rule: RewardRule | None = None, admission: bool = True,
                 base: RuleDefault | None = None):
        self.config = config
        self.base = None if base is None else base.to(device)
        self.device = device
        self.admission = admission
        self.reward_rule = reward_rule or admission_reward
        self.q = QNetwork(obs_dim, scale, config.hidden, num_actions).to(device)
        self.target = QNetwork(obs_dim, scale, config.hidden, num_actions).to(device)
        self.target.load_state_dict(self.q.state_dict())
        self.optimizer = torch.optim.Adam(self.q.parameters(), lr=config.lr)
        self.rbar = torch.zeros((), device=device)
        self.reference: torch.Tensor | None = None  # rvi: observations whose mean value is rbar
        self.updates = 0

    @torch.inference_mode()  # actions only, never a target: no autograd bookkeeping
    def greedy_actions(self, obs: torch.Tensor) -> torch.Tensor:
        return greedy(self.q(obs), self.admission)

    def update(self, batch: Batch, lam: float, eps: float) -> dict[str, torch.Tensor]:
        """One gradient step on a replay batch; returns detached diagnostics."""
        cfg = self.config
        r = self.reward_rule(batch.action, batch.success.float(), batch.cost, lam, eps)
        q_sa = self.q(batch.obs).gather(1, batch.action[:, None]).squeeze(1)
        with torch.no_grad():
            if cfg.rbar_update == "rvi":
                if self.reference is None:
                    self.reference = batch.obs[:REFERENCE_STATES].clone()
                self.rbar = self.bootstrap(self.target, self.reference).mean()
            target = r - self.rbar + self.bootstrap(self.target, batch.next_obs)
            delta = r - self.rbar + self.bootstrap(self.q, batch.next_obs) - q_sa
        loss = F.huber_loss(q_sa, target, delta=cfg.huber_delta * max(1.0, lam))
        self._descend(loss)
        if cfg.rbar_update != "rvi":
            mask = batch.greedy if cfg.rbar_update == "paper" else torch.ones_like(batch.greedy)
            self.rbar += cfg.beta * (delta * mask).sum() / mask.sum().clamp(min=1)
        if self.updates % cfg.target_every == 0:
            self.target.load_state_dict(self.q.state_dict())
        return {"loss": loss.detach(), "delta": delta.abs().mean()}

    def regress(self, batch: Batch, lam: float, eps: float) -> dict[str, torch.Tensor]:
        """One gradient step fitting Q(s, a) to the reward of a rollout-labelled batch
        (``drl_ac.learning.lookahead``: minus the action's advantage in cost over the base
        rule's): least squares, so that the fit is the labels' conditional mean, not a robust
        location a skewed label would move; no bootstrap, no rbar (the labels are relative)."""
        target = self.reward_rule(batch.action, batch.success.float(), batch.cost, lam, eps)
        q_sa = self.q(batch.obs).gather(1, batch.action[:, None]).squeeze(1)
        loss = F.mse_loss(q_sa, target)
        self._descend(loss)
        return {"loss": loss.detach(), "delta": (q_sa - target).detach().abs().mean()}

    def _descend(self, loss: torch.Tensor) -> None:
        """One clipped Adam step on ``loss``, counted in ``updates``."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.q.parameters(), self.config.grad_clip)
        self.optimizer.step()
        self.updates += 1

    def bootstrap(self, net: QNetwork, obs: torch.Tensor) -> torch.Tensor:
        """The value of the next state: the best action's, or the base rule's."""
        q = net(obs)
        if self.base is None:
            return q.max(1).values
        return q.gather(1, self.base(obs)[:, None]).squeeze(1)

    def state_dict(self) -> dict:
        return {"q": self.q.state_dict(), "target": self.target.state_dict(),
                "optimizer": self.optimizer.state_dict(), "rbar": self.rbar.cpu(), "updates": self.updates,
                "reference": None if self.reference is None else self.reference.cpu()}

    def load_state_dict(self, state: dict) -> None:
        self.q.load_state_dict(state["q"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.rbar = state["rbar"].to(self.device)
        self.updates = int(state["updates"])
        reference = state.get("reference")  # absent in files written before rvi
        self.reference = None if reference is None else reference.to(self.device)
