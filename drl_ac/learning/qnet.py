"""Differential Q-network: observation in, one value per action out, and the greedy rule."""

from __future__ import annotations

from collections.abc import Sequence

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


def greedy(q: torch.Tensor, admission: bool, bias: torch.Tensor | float = 0.0,
           default: torch.Tensor | int | None = None) -> torch.Tensor:
    """Greedy actions from Q-values (B, K): the best action other than a default, taken where
    its advantage over the default is >= ``bias``, else the default.

    Admission: the default is 0 (reject) and the best is the best admitting action; bias 0
    is the greedy policy, and a calibrated bias moves the operating point along the learned
    ranking of states. Control: argmax, or with a ``default`` (e.g. the tuned rule's
    action, ``-1`` = none) the argmax only where it beats the default by ``bias`` (a guard:
    with bias > 0 the policy leaves a rule that is known to be good only where the network
    is confident; ``drl_ac.evaluation.selection`` chooses the bias on a validation seed).
    """
    if admission:
        best = q[:, 1:].argmax(1) + 1
        fallback = torch.zeros_like(best)
    else:
        best = q.argmax(1)
        if default is None:
            return best
        fallback = torch.as_tensor(default, device=q.device).expand_as(best)
    advantage = q.gather(1, best[:, None]).squeeze(1) - q.gather(1, fallback.clamp(min=0)[:, None]).squeeze(1)
    return torch.where((advantage >= bias) | (fallback < 0), best, fallback)


def rate_band(obs: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """Per row, how many of ``edges`` (ascending arrival rates) are at or below the arrival-rate
    estimate, the observation's last feature: the band a scheduled rule or operating point uses
    (``numpy.searchsorted(edges, rate, side="right")``)."""
    return (obs[:, -1:] >= edges).sum(1)


class RuleDefault(nn.Module):
    """A tuned rule's action per observation, in torch so that it is exported with the policy
    (the default a guarded control policy keeps unless the network is confident). ``rule``:
    ``{"kind": "threshold", "column": c, "k": k, "below": a, "above": b}`` (action a while
    obs[:, c] < k, else b: d by a load threshold) or ``{"kind": "table", "actions": [...]}``
    (actions[i] for the one-hot block of the last len(actions) features: the signalled pool)
    or ``{"kind": "prefix", "column": c, "m": m, "actions": [...]}`` (actions[j], j the number of
    leading features c + 1, c + 2, ... at most m: redundancy's own-server threshold) or
    ``{"kind": "constant", "action": a}`` or ``{"kind": "scheduled", "edges": [...], "rules":
    [...]}`` (rules[i], each of these forms, where the arrival-rate estimate, the observation's
    last feature, has i of the edges at or below it: ``drl_ac.rules.scheduled``); the rules'
    ``guard_fields()`` (``drl_ac.rules``) write them (``rule_of`` turns a constant action's into
    the constant form)."""

    def __init__(self, rule: dict, columns: int | None = None):
        super().__init__()
        self.columns = columns  # the leading features the rule reads (ObservationEncoding.rule_columns)
        self.kind = str(rule["kind"])
        if self.kind == "threshold":
            self.column = int(rule["column"])
            self.register_buffer("k", torch.tensor(float(rule["k"])))
            self.register_buffer("below", torch.tensor(int(rule["below"])))
            self.register_buffer("above", torch.tensor(int(rule["above"])))
        elif self.kind in ("table", "prefix"):
            self.register_buffer("actions", torch.tensor([int(a) for a in rule["actions"]]))
            if self.kind == "prefix":
                self.column = int(rule["column"])
                self.register_buffer("m", torch.tensor(float(rule["m"])))
        elif self.kind == "constant":
            self.register_buffer("action", torch.tensor(int(rule["action"])))
        elif self.kind == "scheduled":
            if columns is None:
                raise ValueError("default_rule.kind scheduled switches by the arrival-rate estimate, which this "
                                 "policy does not observe. Fix: train with rate_estimate (--rate-estimate).")
            self.register_buffer("edges", torch.tensor([float(e) for e in rule["edges"]]))
            self.rules = nn.ModuleList(RuleDefault(r) for r in rule["rules"])
            if len(self.rules) != self.edges.numel() + 1:
                raise ValueError(f"default_rule: a scheduled rule has {len(self.rules)} rules for "
                                 f"{self.edges.numel()} edges. Fix: give one rule more than edges.")
        else:
            raise ValueError(f"default_rule.kind: unknown {self.kind!r}. Fix: use threshold, table, prefix, "
                             "constant or scheduled.")

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.kind == "scheduled":
            which = rate_band(obs, self.edges)
            head = obs[:, : self.columns]
            return torch.stack([r(head) for r in self.rules], 1).gather(1, which[:, None]).squeeze(1)
        if self.columns is not None:
            obs = obs[:, : self.columns]
        if self.kind == "threshold":
            return torch.where(obs[:, self.column] < self.k, self.below, self.above)
        if self.kind == "constant":
            return self.action.expand(obs.shape[0])
        if self.kind == "prefix":
            free = torch.ones_like(obs[:, 0], dtype=torch.bool)
            count = torch.zeros_like(obs[:, 0], dtype=torch.long)
            for j in range(1, self.actions.numel()):  # unrolled when exported (ONNX has no cumprod)
                free = free & (obs[:, self.column + j] <= self.m)
                count = count + free.long()
            return self.actions[count]
        return self.actions[obs[:, -self.actions.numel():].argmax(1)]


def rule_of(guard_fields: dict) -> dict:
    """A ``RuleDefault`` description from a rule's ``guard_fields()`` (``default_rule``, or a
    constant action's ``default_action``)."""
    if "default_rule" in guard_fields:
        return dict(guard_fields["default_rule"])
    return {"kind": "constant", "action": int(guard_fields["default_action"])}


class GreedyPolicy(nn.Module):
    """What is exported: observation batch (B, D) float32 -> actions (B,) int64. A control
    policy's default (``greedy``) is one action or, with ``rule``, a tuned rule's per row.

    An admission policy may randomise at its margin: where the advantage of admitting is at
    least ``bias`` it admits, where it lies in ``[bias - margin, bias)`` it admits with
    probability ``mix``, below that it rejects (a constrained MDP's optimum admits with a
    probability in its marginal states, and so spends the violation budget exactly; a greedy
    rule can only step between the few violations its states allow). The draw is an input:
    ``forward(obs, u)`` admits a row where ``u < P(admit)``, ``u`` uniform in [0, 1) per row,
    so an exported graph is reproducible from the caller's seed; without ``u`` it admits where
    P(admit) is 1 (the conservative, deterministic part; ``mix`` 0: exactly the greedy rule).

    A scheduled operating point (``edges``, ascending arrival rates): ``bias``, ``margin`` and
    ``mix`` are then one value per band, the band where the arrival-rate estimate (the
    observation's last feature) has i of the edges at or below it, as ``RuleDefault``'s
    scheduled rule: one operating point calibrated at each load, where one calibrated at the
    peak leaves a quieter load's violation budget unspent (``calibrate_schedule``)."""

    def __init__(self, qnet: QNetwork, bias: float | Sequence[float] = 0.0, admission: bool = True, default: int = -1,
                 rule: RuleDefault | None = None, margin: float | Sequence[float] = 0.0,
                 mix: float | Sequence[float] = 0.0, edges: Sequence[float] = ()):
        super().__init__()
        self.qnet = qnet
        self.admission = admission
        self.rule = rule
        self.scheduled = len(edges) > 0
        if self.scheduled and not admission:
            raise ValueError("bias_edges: an operating point per band of the rate estimate is an admission "
                             "policy's. Fix: drop bias_edges on a control policy.")
        if list(edges) != sorted(set(edges)):
            raise ValueError(f"bias_edges: {list(edges)} must be ascending arrival rates, each once. Fix: give the "
                             "rates where the operating point switches, lowest first.")
        for name, value in (("bias", bias), ("margin", margin), ("mix", mix)):
            value = torch.tensor(value, dtype=torch.float32)
            if self.scheduled and value.ndim == 0:  # one value for every band
                value = value.expand(len(edges) + 1).clone()
            if self.scheduled and value.shape != (len(edges) + 1,):
                raise ValueError(f"{name}: {len(edges)} edges need {len(edges) + 1} values, one per band of the "
                                 f"arrival-rate estimate, got shape {tuple(value.shape)}. Fix: give one per band.")
            if not self.scheduled and value.ndim != 0:
                raise ValueError(f"{name}: {tuple(value.shape)} values without bias_edges. Fix: give one value, or "
                                 "bias_edges with one fewer rate than values.")
            self.register_buffer(name, value)
        self.register_buffer("edges", torch.tensor([float(e) for e in edges]))
        self.register_buffer("default", torch.tensor(int(default)))

    def operating_point(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(bias, margin, mix): one each, or per row, the band of the rate estimate's."""
        if not self.scheduled:
            return self.bias, self.margin, self.mix
        band = rate_band(obs, self.edges)
        return self.bias[band], self.margin[band], self.mix[band]

    def admit_probability(self, q: torch.Tensor, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the best admitting action, P(admit)) per row of admission Q-values (B, K) at
        observations ``obs``."""
        bias, margin, mix = self.operating_point(obs)
        best = q[:, 1:].argmax(1) + 1
        advantage = q.gather(1, best[:, None]).squeeze(1) - q[:, 0]
        one, zero = torch.ones_like(advantage), torch.zeros_like(advantage)
        p = torch.where(advantage >= bias, one,
                        torch.where(advantage >= bias - margin, mix.expand_as(advantage), zero))
        return best, p

    def forward(self, obs: torch.Tensor, u: torch.Tensor | None = None) -> torch.Tensor:
        if not self.admission:
            return greedy(self.qnet(obs), False, self.bias, self.default if self.rule is None else self.rule(obs))
        best, p = self.admit_probability(self.qnet(obs), obs)
        admit = p >= 1 if u is None else u < p
        return torch.where(admit, best, torch.zeros_like(best))
