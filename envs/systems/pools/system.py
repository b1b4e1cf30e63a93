"""Two server pools (docs/systems/pools.md; block ``pools:``): two FCFS stations (``pool1``,
``pool2``), job types with pool-dependent speeds, and per job the controller's choice of a
first pool and of rerouting or replicating after tau in service there
(``envs.systems.pools.dispatch.PoolsDispatch``). Every job is served: the goal is the mean response time.

Stability. A job of type j that starts on pool a (speed s = s_aj, other pool b, speed r)
and acts after tau uses server time T_a on a and T_b on b: none: T_a = X / s; reroute:
T_a = min(X / s, tau), T_b = Y / r if X / s > tau; replicate: T_a = min(X / s, tau + Y / r),
T_b = (T_a - tau)^+ (Y = X with ``restart: same``, a fresh draw with ``fresh``), the job on b
starting at once (exact server time for none and reroute; replication's copies may wait,
which the formula ignores: ``envs.systems.pools.theory``, whose bound for one policy this
reproduces). The controller sees the job's type information k (the type, a signal or
nothing) and may mix its choices per k; pool i is stable iff lambda E[server time on i] <
N_i. The largest arrival rate some mix carries is 1 / max_y sum_k P(k) min_a (y u_1(k, a)
+ (1 - y) u_2(k, a)), u_i(k, a) = E[T_i | k, a] / N_i (the min-max over mixes, by duality),
a concave piecewise-linear function of y maximised over its breakpoints (``capacity``).
The expectations come from 2^18 draws of X (and Y) with a fixed seed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envs.distributions import Distribution, make_distribution
from envs.errors import (
    SpecError,
    as_number,
    brief,
    check_distinct,
    check_keys,
    did_you_mean,
    is_list,
    number_list,
)
from envs.observation import ObservationEncoding, observed_period
from envs.systems.base import ControlSystem
from envs.systems.pools.dispatch import PoolsDispatch
from envs.systems.pools.kernel import PoolsKernel
from envs.systems.pools.theory import PoolsModel, PoolsPolicy, best_tau

# The most instances the compiled loop runs (above, the NumPy loop: the same trajectory, bit for
# bit). Its events read and write most of a job's columns, one row at a time, and past the cache
# NumPy's gathers over all instances win: on one thread, full replication at load 0.5 ran 4-5x
# NumPy's decisions/s at 8-128 instances, 3.1x at 512, 1.5x at 1024, 0.97x at 2048 and 0.77x at
# 4096 (docs/engine.md).
KERNEL_MAX_INSTANCES = 1024

POOLS_KEYS = ("servers", "types", "size", "knowledge", "assign", "p_split", "policy", "tau", "queue", "preempt",
              "restart", "timer", "actions")
POOL_ACTION_KEYS = ("pool", "policy", "tau", "queue", "preempt")
POOL_KNOWLEDGE = ("full", "none", "signal", "revealed")
POOL_POLICIES = ("none", "reroute", "replicate")
POOL_RESTARTS = ("same", "fresh")
POOL_TIMERS = ("service", "arrival")
POOL_QUEUES = ("back", "front")
DRAWS = 1 << 18
SEED = 20240522


@dataclass(frozen=True)
class PoolAction:
    """One choice of the pools controller: the first pool (0, 1, or -1: the assignment rule),
    what happens after tau in service there (``policy``), tau per first pool, and where the
    copy or the rerouted job joins the other pool's queue (``queue``: back, as any arrival, or
    front, next in line: it then waits at most for the jobs in service there), and ``preempt``:
    a replicated job still in service on its first pool this long after its copy was made, with
    the copy still queued, has the copy take a server of the other pool from a job of that
    pool's own (which resumes first, its work so far kept): a rescue of a likely wrong signal."""

    pool: int
    policy: str
    tau: tuple[float, float]
    queue: str = "back"
    preempt: float = math.inf

    @property
    def acts(self) -> bool:
        """Whether the job is ever rerouted or replicated."""
        return self.policy != "none" and not all(math.isinf(t) for t in self.tau)

    @property
    def name(self) -> str:
        where = "auto" if self.pool < 0 else f"pool{self.pool + 1}"
        if not self.acts:
            return where
        t = f"{self.tau[0]:g}" if self.tau[0] == self.tau[1] else f"{self.tau[0]:g},{self.tau[1]:g}"
        return (f"{where}-{self.policy}@{t}" + ("-front" if self.queue == "front" else "")
                + (f"-preempt@{self.preempt:g}" if math.isfinite(self.preempt) else ""))

    def to_dict(self) -> dict[str, Any]:
        out = {"pool": "auto" if self.pool < 0 else self.pool + 1, "policy": self.policy,
               "tau": [_tau_out(t) for t in self.tau]}
        if self.queue != "back":  # the key is new: older dicts (checkpoints) stay as they were
            out["queue"] = self.queue
        if math.isfinite(self.preempt):
            out["preempt"] = self.preempt
        return out


@dataclass(frozen=True)
class Pools:
    """Two server pools (docs/systems/pools.md): ``servers`` = (N_1, N_2) FCFS servers, job
    types with probabilities ``p`` and speeds ``speeds[i][j]`` (pool i, type j: a type-j job
    needs X / s_ij on pool i, X from ``size``).

    ``knowledge``: full, none, signal (a signal equal to the type w.p. ``q``, else another type
    uniformly) or revealed (the type known for a fraction ``f`` of jobs). ``assign``: faster
    (the faster pool for the known or most likely type; ``p_split`` = P(pool 1) without
    information or on equal speeds) or split (pool 1 w.p. ``p_split``). ``actions``: the
    controller's (pool, policy, tau) choices; a single one is the fixed policy.
    ``restart``: a rerouted job or a copy needs the same X (same) or a fresh draw (fresh);
    ``timer``: tau counts from the start of service on the first pool (service) or from arrival.
    """

    servers: tuple[int, int]
    p: tuple[float, ...]
    speeds: tuple[tuple[float, ...], tuple[float, ...]]
    size: Distribution
    knowledge: str = "full"
    q: float | None = None
    f: float | None = None
    assign: str = "faster"
    p_split: float = 0.5
    restart: str = "same"
    timer: str = "service"
    actions: tuple[PoolAction, ...] = (PoolAction(-1, "none", (math.inf, math.inf)),)

    @property
    def num_types(self) -> int:
        return len(self.p)

    def pool1_given_info(self) -> np.ndarray:
        """(J + 1,) P(first pool = pool 1) given the dispatcher's information (the type or
        signal k < J, nothing k = J): the faster pool for the known type; for a signal, the
        faster pool of a most likely type (ties: uniform among them); p_split without
        information, on equal speeds, or always under ``split``."""
        J = self.num_types
        out = np.full(J + 1, self.p_split)
        if self.assign == "split" or self.knowledge == "none":
            return out
        s = np.asarray(self.speeds, float)
        pref = np.where(s[0] > s[1], 1.0, np.where(s[0] < s[1], 0.0, self.p_split))
        if self.knowledge == "signal":
            q = self.q
            lik = np.eye(J) if J == 1 else np.where(np.eye(J, dtype=bool), q, (1.0 - q) / (J - 1))  # [k, j]
            post = lik * np.asarray(self.p)[None, :]
            top = post >= post.max(axis=1, keepdims=True) * (1.0 - 1e-12)
            out[:J] = (top * pref[None, :]).sum(1) / top.sum(1)
        else:
            out[:J] = pref
        return out

    def to_dict(self, dist) -> dict[str, Any]:
        knowledge: Any = self.knowledge
        if self.knowledge == "signal":
            knowledge = {"signal": self.q}
        elif self.knowledge == "revealed":
            knowledge = {"revealed": self.f}
        return {"servers": list(self.servers),
                "types": [{"p": pj, "speeds": [self.speeds[0][j], self.speeds[1][j]]} for j, pj in enumerate(self.p)],
                "size": dist(self.size), "knowledge": knowledge,
                "assign": "faster" if self.assign == "faster" else {"split": self.p_split}, "p_split": self.p_split,
                "restart": self.restart, "timer": self.timer, "actions": [a.to_dict() for a in self.actions]}




def _tau_out(t: float) -> float | str:
    return "inf" if math.isinf(t) else t


def _word(raw: Any, field: str, choices: Sequence[str]) -> str:
    if not isinstance(raw, str) or raw not in choices:
        guess = did_you_mean(raw, choices) if isinstance(raw, str) else None
        raise SpecError(field, f"unknown value {brief(raw)}",
                        (f"did you mean '{guess}'? " if guess else "") + f"use one of {', '.join(choices)}")
    return raw


def _probability(raw: Any, field: str, fix: str) -> float:
    x = as_number(raw, field, fix)
    if not 0.0 <= x <= 1.0:
        raise SpecError(field, f"must be a probability in [0, 1], got {brief(raw)}", fix)
    return x


def _pool_tau(raw: Any, field: str) -> tuple[float, float]:
    """tau: one time >= 0 for both pools (inf = never) or [tau_1, tau_2] (by first pool)."""
    fix = "give a time >= 0 (.inf or 'inf' = never), or [tau_1, tau_2] per first pool"
    values = number_list(raw, field, "times", fix, lambda x: None if x >= 0 else "must be >= 0") if is_list(raw) \
        else (as_number(raw, field, fix),)
    if len(values) not in (1, 2) or any(not x >= 0 for x in values):  # not >= also catches NaN
        raise SpecError(field, f"expected one time >= 0 or two, got {brief(raw)}", fix)
    return (values[0], values[-1])


def _pool_action(raw: Any, field: str, default: PoolAction) -> PoolAction:
    fix = ("give e.g. {pool: 1, policy: reroute, tau: 2.0} (pool: 1, 2 or auto; policy: none, reroute, replicate; "
           "queue: back or front)")
    if not isinstance(raw, Mapping):
        raise SpecError(field, f"expected a mapping, got {brief(raw)}", fix)
    check_keys(raw, POOL_ACTION_KEYS, field, what="a pools action")
    pool = raw.get("pool", "auto")
    if pool == "auto":
        pool = -1
    elif isinstance(pool, (int, np.integer)) and not isinstance(pool, bool) and pool in (1, 2):
        pool = int(pool) - 1
    else:
        raise SpecError(field + ".pool", f"expected 1, 2 or auto, got {brief(pool)}", fix)
    policy = _word(raw.get("policy", default.policy), field + ".policy", POOL_POLICIES)
    tau = _pool_tau(raw["tau"], field + ".tau") if "tau" in raw else default.tau
    if policy != "none" and "tau" not in raw and "policy" in raw and default.policy == "none":
        raise SpecError(field + ".tau", f"missing for policy {policy}", "give the time in service before acting")
    queue = _word(raw.get("queue", default.queue), field + ".queue", POOL_QUEUES)
    if "preempt" in raw:
        preempt = _preempt(raw["preempt"], field + ".preempt", policy)
    else:  # the block's rescue, for the actions that make a copy
        preempt = default.preempt if policy == "replicate" else math.inf
    return PoolAction(pool, policy, tau, queue, preempt)


def _preempt(raw: Any, field: str, policy: str) -> float:
    """The rescue time of a replicated job's copy (``PoolAction.preempt``); inf: never."""
    fix = "give a time >= 0 after the copy is made (.inf or 'inf' = never)"
    value = as_number(raw, field, fix)
    if not value >= 0:  # not >= also catches NaN
        raise SpecError(field, f"must be >= 0, got {brief(raw)}", fix)
    if math.isfinite(value) and policy != "replicate":
        raise SpecError(field, f"only a copy preempts, and policy {policy} makes none",
                        "use policy: replicate with a tau, or leave preempt out (or give it on the replicate actions)")
    return value




def _types(types: Any) -> tuple[list[float], list[list[float]]]:
    """``pools.types``: each type's probability and its speeds on the two pools."""
    if not is_list(types) or not types:
        raise SpecError("pools.types", f"must be a non-empty list, got {brief(types)}",
                        "list each job type as {p: probability, speeds: [on pool 1, on pool 2]}")
    p, speeds = [], []
    for j, t in enumerate(types):
        field = f"pools.types[{j}]"
        if not isinstance(t, Mapping):
            raise SpecError(field, f"expected a mapping, got {brief(t)}", "give {p: 0.5, speeds: [1.0, 0.1]}")
        check_keys(t, ("p", "speeds"), field, what="a job type")
        for key in ("p", "speeds"):
            if key not in t:
                raise SpecError(f"{field}.{key}", "missing", "give {p: 0.5, speeds: [1.0, 0.1]}")
        p.append(_probability(t["p"], field + ".p", "give the type's probability"))
        sp = number_list(t["speeds"], field + ".speeds", "speeds", "give two speeds > 0: [on pool 1, on pool 2]",
                         lambda x: None if math.isfinite(x) and x > 0 else "must be finite and > 0")
        if len(sp) != 2:
            raise SpecError(field + ".speeds", f"expected two speeds [on pool 1, on pool 2], got {len(sp)}",
                            "give one speed per pool")
        speeds.append(sp)
    if abs(sum(p) - 1.0) > 1e-9:
        raise SpecError("pools.types", f"the probabilities p sum to {sum(p):.6g}", "make them sum to 1")
    return p, speeds


def _knowledge(know: Any) -> tuple[str, float | None, float | None]:
    """``pools.knowledge``: the level, and the signal's q or the revealed fraction f."""
    q, f = None, None
    know_fix = "use full, none, {signal: q} (signal = type w.p. q) or {revealed: f} (type known for a fraction f)"
    if isinstance(know, Mapping):
        if len(know) != 1 or next(iter(know)) not in ("signal", "revealed"):
            raise SpecError("pools.knowledge", f"expected {{signal: q}} or {{revealed: f}}, got {brief(know)}",
                            know_fix)
        (kind, value), = know.items()
        if kind == "signal":
            q = _probability(value, "pools.knowledge.signal", "give the probability q that the signal is the type")
        else:
            f = _probability(value, "pools.knowledge.revealed", "give the fraction f of jobs whose type is known")
        know = kind
    elif know not in ("full", "none"):
        hint = "partial knowledge is {signal: q} or {revealed: f}; " if know in ("partial", "signal", "revealed") else ""
        raise SpecError("pools.knowledge", f"unknown knowledge level {brief(know)}", hint + know_fix)
    return know, q, f


@functools.lru_cache(maxsize=64)
def server_times(pools: Pools) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P(k), T, first): the probability of each type information k (0..J-1: that type or
    signal, J: nothing known), T[k, a, i] = E[server time on pool i | k, action a] (the job on
    the other pool starting at once, see the module text), from ``DRAWS`` draws."""
    J = pools.num_types
    p = np.asarray(pools.p)
    lik = np.zeros((J, J + 1))  # P(info k | type j)
    if pools.knowledge == "full":
        lik[:, :J] = np.eye(J)
    elif pools.knowledge == "none":
        lik[:, J] = 1.0
    elif pools.knowledge == "signal":
        lik[:, :J] = np.eye(J) if J == 1 else np.where(np.eye(J, dtype=bool), pools.q, (1.0 - pools.q) / (J - 1))
    else:
        lik[:, :J] = pools.f * np.eye(J)
        lik[:, J] = 1.0 - pools.f
    pk = p @ lik
    post = (p[:, None] * lik) / np.where(pk > 0, pk, 1.0)[None, :]  # P(type j | info k)
    p1 = pools.pool1_given_info()  # P(first = pool 1 | info k) under the assignment rule
    rng = np.random.default_rng(SEED)
    x = pools.size.sample(rng, DRAWS)
    y = pools.size.sample(rng, DRAWS) if pools.restart == "fresh" else x
    speed = np.asarray(pools.speeds, float)  # (2, J)
    A = len(pools.actions)
    per_type = np.zeros((J, A, 2, 2))  # [j, a, first pool, pool]
    for a, act in enumerate(pools.actions):
        for j in range(J):
            for first in (0, 1):
                s, r = speed[first, j], speed[1 - first, j]
                tau = act.tau[first]
                on_first = x / s
                if act.policy == "none" or math.isinf(tau):
                    ta, tb = on_first.mean(), 0.0
                elif act.policy == "reroute":
                    ta, tb = np.minimum(on_first, tau).mean(), np.where(on_first > tau, y / r, 0.0).mean()
                else:  # replicate: both run until the first finishes
                    t = np.minimum(on_first, tau + y / r)
                    ta, tb = t.mean(), np.maximum(t - tau, 0.0).mean()
                per_type[j, a, first, first], per_type[j, a, first, 1 - first] = ta, tb
    first = np.zeros((J + 1, A))  # P(first = pool 1 | info k, action a)
    for a, act in enumerate(pools.actions):
        first[:, a] = p1 if act.pool < 0 else float(act.pool == 0)
    T = np.einsum("jk,ka,jai->kai", post, first, per_type[:, :, 0, :]) \
        + np.einsum("jk,ka,jai->kai", post, 1.0 - first, per_type[:, :, 1, :])
    return pk, T, first


def capacity(pools: Pools) -> float:
    """The largest arrival rate some mix of the choices per type information keeps both
    pools below load 1 (by the formula of the module text; inf if no server time is used)."""
    pk, T, _ = server_times(pools)
    keep = pk > 0
    pk, u = pk[keep], T[keep] / np.asarray(pools.servers, float)  # u[k, a, i]
    a0, a1 = u[:, :, 0], u[:, :, 1]
    slope = a0 - a1  # y u_1 + (1 - y) u_2 = a1 + y slope, per (k, a)
    ys = [np.zeros(1), np.ones(1)]
    for k in range(u.shape[0]):
        ds = slope[k][:, None] - slope[k][None, :]
        dc = a1[k][None, :] - a1[k][:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = dc / ds
        ys.append(cross[np.isfinite(cross) & (cross > 0) & (cross < 1)])
    y = np.concatenate(ys)
    g = (pk[:, None] * (a1[:, :, None] + slope[:, :, None] * y[None, None, :]).min(1)).sum(0)
    best = float(g.max())
    return math.inf if best <= 0 else 1.0 / best


class PoolsSystem(ControlSystem):
    name = "pools"
    block = "pools"
    kinds = ("control",)
    generates_actions = True

    # ------------------------------------------------------------------ the YAML block
    def reference_rate(self) -> float:
        """The largest arrival rate at which rerouting after tau in service on the signalled
        pool, tau at its best, is stable: the exact formula of ``theory`` (not ``capacity``,
        whose bound for replication assumes copies start at once, false with one server per
        pool)."""
        p = self.spec.block
        policy = PoolsPolicy(knowledge=p.knowledge, q=p.q, f=p.f, assignment=p.assign, p_split=p.p_split,
                             action="reroute", restart=p.restart)
        return float(best_tau(PoolsModel(p.p, p.speeds, p.servers), policy, p.size, same_tau=True).bound)

    @classmethod
    def expand(cls, cfg: Mapping[str, Any], base_dir: Path | None) -> dict[str, Any]:
        """A ``pools`` block stands for two FCFS stations (``pool1``, ``pool2``) and the dispatch
        rule ``envs.systems.pools.dispatch.PoolsDispatch``."""
        raw = cfg["pools"]
        for key in ("stations", "entry", "routing", "actions"):
            if key in cfg:
                raise SpecError(key, "cannot be given with 'pools'",
                                "describe the pools in the pools block (servers, types, size, policy, actions)")
        example = ("give e.g. {servers: [2, 2], types: [{p: 0.5, speeds: [1, 0.1]}, {p: 0.5, speeds: [0.1, 1]}], "
                   "size: {dist: exponential, mean: 1}}")
        if not isinstance(raw, Mapping):
            raise SpecError("pools", f"expected a mapping, got {brief(raw)}", example)
        check_keys(raw, POOLS_KEYS, "pools", what="a pools block",
                   aliases={"speed": "types", "speeds": "types", "p": "types", "n": "servers", "dist": "size",
                            "service": "size", "action": "actions", "threshold": "tau"})
        servers = raw.get("servers")
        if (not is_list(servers) or len(servers) != 2
                or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 10_000
                       for n in servers)):
            raise SpecError("pools.servers", f"must be two positive integers [N1, N2], got {brief(servers)}",
                            "give the number of servers of each pool, e.g. [2, 2]")
        p, speeds = _types(raw.get("types"))
        size = make_distribution(raw.get("size", {"dist": "exponential", "mean": 1.0}), "pools.size", base_dir)
        know, q, f = _knowledge(raw.get("knowledge", "full"))
        p_split = _probability(raw.get("p_split", 0.5), "pools.p_split", "give P(pool 1) when the type says nothing")
        assign = raw.get("assign", "faster")
        if isinstance(assign, Mapping) and set(assign) == {"split"}:
            p_split = _probability(assign["split"], "pools.assign.split", "give the probability of pool 1")
            assign = "split"
        elif assign not in ("faster", "split"):
            raise SpecError("pools.assign", f"unknown assignment {brief(assign)}",
                            "use faster (the faster pool for the known or likely type) or {split: p} (pool 1 w.p. p)")
        policy = _word(raw.get("policy", "none"), "pools.policy", POOL_POLICIES)
        if policy != "none" and "tau" not in raw:
            raise SpecError("pools.tau", f"missing for policy {policy}",
                            "give the time in service before acting: tau: 2.0 or [tau_1, tau_2]")
        tau = _pool_tau(raw.get("tau", math.inf), "pools.tau")
        restart = _word(raw.get("restart", "same"), "pools.restart", POOL_RESTARTS)
        timer = _word(raw.get("timer", "service"), "pools.timer", POOL_TIMERS)
        queue = _word(raw.get("queue", "back"), "pools.queue", POOL_QUEUES)
        preempt = _preempt(raw.get("preempt", math.inf), "pools.preempt", policy)
        default = PoolAction(-1, policy, tau, queue, preempt)
        if "actions" in raw:
            acts = raw["actions"]
            if not is_list(acts) or not acts:
                raise SpecError("pools.actions", f"must be a non-empty list, got {brief(acts)}",
                                "list the controller's choices, e.g. [{pool: 1}, {pool: 2}, {pool: 1, policy: "
                                "replicate, tau: 1.0}]")
            actions = tuple(_pool_action(a, f"pools.actions[{i}]", default) for i, a in enumerate(acts))
        else:
            actions = (default,)
        if timer == "arrival" and any(math.isfinite(a.preempt) for a in actions):
            raise SpecError("pools.timer", "preempt counts from a copy made after tau in service, which timer: "
                            "arrival does not always make", "use timer: service with preempt")
        names = [a.name for a in actions]
        check_distinct(names, "pools.actions", "list each (pool, policy, tau, queue, preempt) once")
        spec_p = Pools((int(servers[0]), int(servers[1])), tuple(p),
                       (tuple(s[0] for s in speeds), tuple(s[1] for s in speeds)), size, know, q, f, assign, p_split,
                       restart, timer, actions)
        out = dict(cfg)
        del out["pools"]
        out["stations"] = [{"name": f"pool{i + 1}", "servers": int(servers[i]), "service": size, "kind": "fcfs"}
                           for i in range(2)]
        out["actions"] = names
        out.setdefault("objective", "response_time")
        out.setdefault("d_ub", 10.0 * size.mean / min(min(s) for s in speeds))
        out.setdefault("eps", 0.1)
        out["pools"] = spec_p
        return out


    def validate(self) -> None:
        if self.spec.admission:
            raise SpecError("objective", "the pools system is controlled (every job is served), not admitted",
                            "use objective: response_time (the default) or deadline")

    def check_actions(self) -> None:
        """The actions are the block's choices, named by ``expand``."""

    # ------------------------------------------------------------------ the goal
    def describe(self) -> str:
        spec, pools = self.spec, self.spec.block
        n1, n2 = pools.servers
        know = {"full": "type known", "none": "type unknown"}.get(pools.knowledge) or (
            f"a signal right w.p. {pools.q:g}" if pools.knowledge == "signal" else
            f"type known for a fraction {pools.f:g}")
        return (f"{spec.name}: two pools of {n1} and {n2} FCFS servers, {pools.num_types} job types ({know}), "
                f"{len(pools.actions)} choice{'s' if len(pools.actions) > 1 else ''} of first pool and "
                f"reroute/replicate after tau, arrival rate {spec.arrival_rate:.4g}: {self.headline.text(spec.eps)}")

    @property
    def overload_fix(self) -> str:
        return "choose first pools and timers that use less server time"

    # ------------------------------------------------------------------ stability
    def capacity(self) -> float:
        """The largest arrival rate the pools can serve with the spec's choices (``capacity``)."""
        return capacity(self.spec.block)

    def stability_error(self) -> SpecError | None:
        rate, cap = self.spec.arrival_rate, self.capacity()
        if rate < cap:
            return None
        return SpecError("pools", f"arrivals at rate {rate:.4g} exceed what the pools can serve with the choices "
                         f"listed: at most {cap:.3g} per unit time (mixing the choices per type information; server "
                         "time per job with copies and rerouted jobs starting at once), so the queues grow without "
                         "bound", "add servers, add choices that use less server time, or lower the arrival rate")

    # ------------------------------------------------------------------ simulation
    def routing(self):
        return PoolsDispatch(self.spec)

    def kernel(self, eng):
        """The pools' compiled loop (FCFS pools, their timers, reroutes, copies and rescues) up to
        ``KERNEL_MAX_INSTANCES`` instances; the NumPy loop beyond (docs/engine.md)."""
        return PoolsKernel(eng) if eng.B <= KERNEL_MAX_INSTANCES else None

    def encoding(self, include_in_service: bool = False):
        """Jobs waiting and busy servers per pool (always: they show what a timer may free),
        then the arriving job's type information one-hot (types + 1)."""
        spec = self.spec
        return ObservationEncoding(spec.num_stations, True, spec.num_classes, observed_period(spec), False,
                                   spec.block.num_types + 1)
