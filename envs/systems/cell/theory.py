"""Exact loss-system results for a cell of C resource units (docs/systems/cell.md).

Loads are in Erlangs (arrival rate times mean session length). Without channel
dynamics these loss systems are insensitive: blocking depends on the session-length
law only through its mean, so the formulas hold for any session law. Where several
streams share one birth-death chain (guard channels) they must share the mean session
length, since the chain counts busy units and not who holds them.

``admission_lp`` solves the optimal admission problem "minimise blocking subject to
P(dropped | admitted) <= eps" of any small CTMC the caller writes down, which is how the
cases with channel dynamics (where no closed form exists) get an exact optimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from envs.queueing import erlang_b

__all__ = [
    "erlang_b",
    "kaufman_roberts",
    "guard_channel",
    "fractional_guard_channel",
    "ctmc_stationary",
    "CellAdmissionSolution",
    "admission_lp",
    "evaluate_admission_policy",
]


def kaufman_roberts(C: int, demands: Sequence[int], loads: Sequence[float]) -> np.ndarray:
    """Per-class blocking of the multi-rate Erlang loss system (complete sharing).

    Class k asks for ``demands[k]`` units for the whole session, offered ``loads[k]``
    Erlangs. The occupancy distribution satisfies q(j) = (1/j) sum_k a_k b_k q(j - b_k)
    (Kaufman 1981, Roberts 1981), and class k is blocked in states j > C - b_k.
    q is rescaled whenever it grows large, so big cells do not overflow.
    """
    b = np.asarray(demands, dtype=np.int64)
    a = np.asarray(loads, dtype=float)
    if b.shape != a.shape or b.ndim != 1:
        raise ValueError(f"demands and loads need the same length, got {b.shape} and {a.shape}")
    if (b < 1).any() or (a < 0).any():
        raise ValueError("demands must be >= 1 unit and loads >= 0 Erlangs")
    q = np.zeros(C + 1)
    q[0] = 1.0
    for j in range(1, C + 1):
        fits = b <= j
        q[j] = (a[fits] * b[fits] * q[j - b[fits]]).sum() / j
        if q[j] > 1e200:
            q[: j + 1] /= q[j]
    q /= q.sum()
    tail = np.concatenate([np.cumsum(q[::-1])[::-1], [0.0]])  # tail[j] = P(occupancy >= j)
    return np.array([tail[max(C - bk + 1, 0)] for bk in b])


def _birth_death(births: np.ndarray) -> np.ndarray:
    """Stationary law of a chain on 0..C with birth rates ``births[n]`` (n < C) and death rate n."""
    C = births.size
    p = np.zeros(C + 1)
    p[0] = 1.0
    for n in range(C):
        p[n + 1] = p[n] * births[n] / (n + 1)
        if p[n + 1] > 1e200:
            p[: n + 2] /= p[n + 1]
    return p / p.sum()


def fractional_guard_channel(C: int, new_load: float, handover_load: float,
                             admit_prob: Sequence[float]) -> tuple[float, float]:
    """(new-call blocking, handover dropping) when a new call finding n busy units is admitted
    with probability ``admit_prob[n]`` (n = 0..C-1) and a handover whenever a unit is free.

    The busy count is a birth-death chain with birth rate new_load * admit_prob[n] +
    handover_load and death rate n (time in mean session lengths). By PASTA a new call is
    refused with probability sum_n p_n (1 - admit_prob[n]) (with admit_prob[C] = 0) and a
    handover is dropped with probability p_C.
    """
    beta = np.asarray(admit_prob, dtype=float)
    if beta.shape != (C,):
        raise ValueError(f"admit_prob needs one probability per state 0..C-1 ({C} values), got shape {beta.shape}")
    if ((beta < 0) | (beta > 1)).any():
        raise ValueError("admit_prob values must lie in [0, 1]")
    p = _birth_death(new_load * beta + handover_load)
    refused = np.append(1.0 - beta, 1.0)
    return float((p * refused).sum()), float(p[C])


def guard_channel(C: int, g: int, new_load: float, handover_load: float) -> tuple[float, float]:
    """(new-call blocking, handover dropping) with g of the C units reserved for handovers:
    a new call is admitted iff fewer than C - g units are busy, a handover iff one is free."""
    if not 0 <= g <= C:
        raise ValueError(f"guard channels g must lie in 0..C={C}, got {g}")
    return fractional_guard_channel(C, new_load, handover_load, (np.arange(C) < C - g).astype(float))


def ctmc_stationary(Q: np.ndarray) -> np.ndarray:
    """Stationary law pi of an irreducible CTMC generator Q (pi Q = 0, sum pi = 1).

    One balance equation is redundant; it is replaced by the normalisation, which makes the
    system non-singular exactly when the chain has a single recurrent class.
    """
    Q = np.asarray(Q, dtype=float)
    n = Q.shape[0]
    if Q.shape != (n, n) or not np.allclose(Q.sum(1), 0.0, atol=1e-9 * max(1.0, np.abs(Q).max())):
        raise ValueError("Q must be a square generator whose rows sum to 0 (diagonal = -total out-rate)")
    A = Q.T.copy()
    A[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    try:
        pi = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        raise ValueError("the chain has more than one closed class: its stationary law is not unique") from None
    return np.clip(pi, 0.0, None) / np.clip(pi, 0.0, None).sum()


@dataclass
class CellAdmissionSolution:
    """A stationary admission policy and its long-run measures."""

    admit: np.ndarray  # P(admit | state[, type]), shaped like the request rates; 0 where never used
    stationary: np.ndarray  # (S,) long-run state probabilities
    blocking: float  # refused requests / requests (all controllable types together)
    blocking_per_type: np.ndarray  # (K,)
    dropping: float  # drops / admissions, or drops / reference_rate when one was given
    admission_rate: float  # admitted requests per unit time
    drop_rate: float  # dropped sessions per unit time


def _model(request_rates, admit_to, transitions):
    """Normalise the caller's model to (lam (S, K), to (S, K), src, dst, rate, drops, was_1d)."""
    lam = np.asarray(request_rates, dtype=float)
    was_1d = lam.ndim == 1
    lam = lam.reshape(lam.shape[0], -1)
    to = np.asarray(admit_to, dtype=np.int64).reshape(lam.shape)
    S = lam.shape[0]
    if (lam < 0).any():
        raise ValueError("request rates must be >= 0")
    if ((to < -1) | (to >= S)).any():
        raise ValueError(f"admit_to must hold a state in 0..{S - 1}, or -1 where the request cannot be admitted")
    rows = [tuple(t) + (0.0,) * (4 - len(t)) for t in transitions]
    tr = np.array(rows, dtype=float).reshape(-1, 4)
    src, dst = tr[:, 0].astype(np.int64), tr[:, 1].astype(np.int64)
    if ((src < 0) | (src >= S) | (dst < 0) | (dst >= S)).any():
        raise ValueError(f"transitions must go between states 0..{S - 1}")
    if (tr[:, 2] < 0).any() or (tr[:, 3] < 0).any():
        raise ValueError("transition rates and drop counts must be >= 0")
    return lam, to, src, dst, tr[:, 2], tr[:, 3], was_1d


def _solution(lam, p, y, src, rate, drops, reference_rate, was_1d) -> CellAdmissionSolution:
    offered = lam * p[:, None]
    admitted = lam * y
    admit = np.where(p[:, None] > 1e-12, np.clip(y / np.maximum(p[:, None], 1e-300), 0.0, 1.0), 0.0)
    req_k = offered.sum(0)
    block_k = np.where(req_k > 0, 1.0 - admitted.sum(0) / np.maximum(req_k, 1e-300), 0.0)
    adm = float(admitted.sum())
    drop = float((rate * drops * p[src]).sum())
    denom = adm if reference_rate is None else reference_rate
    return CellAdmissionSolution(
        admit=admit[:, 0] if was_1d else admit,
        stationary=p,
        blocking=float(1.0 - adm / req_k.sum()) if req_k.sum() > 0 else 0.0,
        blocking_per_type=np.clip(block_k, 0.0, 1.0),
        dropping=drop / denom if denom > 0 else 0.0,
        admission_rate=adm,
        drop_rate=drop,
    )


def _balance(lam, to, src, dst, rate):
    """The LP's equalities: balance of every state (outflow - inflow = 0) and sum_s p[s] = 1."""
    S, K = lam.shape
    n_var = S + S * K

    def yi(s, k):
        return S + s * K + k

    r, c, v = [], [], []
    moves = src != dst
    for s, t, q in zip(src[moves], dst[moves], rate[moves], strict=True):
        r += [s, t]
        c += [s, s]
        v += [q, -q]
    for s in range(S):
        for k in range(K):
            t = to[s, k]
            if t >= 0 and t != s and lam[s, k] > 0:
                r += [s, t]
                c += [yi(s, k), yi(s, k)]
                v += [lam[s, k], -lam[s, k]]
    balance = sparse.coo_matrix((v, (r, c)), shape=(S, n_var)).tocsr()
    norm = sparse.csr_matrix(np.concatenate([np.ones(S), np.zeros(S * K)])[None, :])
    a_eq = sparse.vstack([balance, norm]).tocsr()
    b_eq = np.zeros(S + 1)
    b_eq[S] = 1.0
    return a_eq, b_eq


def _capacity_and_drops(lam, src, rate, drops, eps: float, reference_rate: float | None):
    """The LP's inequalities: y[s,k] <= p[s], and the drop rate against eps."""
    S, K = lam.shape
    n_var = S + S * K
    # y[s,k] - p[s] <= 0
    ks = np.repeat(np.arange(S), K)
    cap = sparse.coo_matrix((np.concatenate([np.ones(S * K), -np.ones(S * K)]),
                             (np.tile(np.arange(S * K), 2), np.concatenate([S + np.arange(S * K), ks]))),
                            shape=(S * K, n_var))
    # drop rate - eps * admission rate <= 0   (or <= eps * reference_rate)
    drop_row = np.zeros(n_var)
    np.add.at(drop_row, src, rate * drops)
    if reference_rate is None:
        drop_row[S:] -= eps * lam.ravel()
        drop_rhs = 0.0
    else:
        drop_rhs = eps * reference_rate
    a_ub = sparse.vstack([cap, sparse.csr_matrix(drop_row[None, :])]).tocsr()
    b_ub = np.append(np.zeros(S * K), drop_rhs)
    return a_ub, b_ub


def admission_lp(request_rates, admit_to, transitions, eps: float, *, reference_rate: float | None = None,
                 weights: Sequence[float] | None = None) -> CellAdmissionSolution:
    """Optimal stationary (randomised) admission policy of a finite CTMC, by linear programming.

    The model, on states 0..S-1:
      * ``request_rates[s, k]`` ((S,) for one type): rate of controllable requests of type k
        in state s (Poisson, so by PASTA they see the stationary law);
      * ``admit_to[s, k]``: the state an admitted type-k request moves the chain to, or -1
        where it cannot be admitted (no room: a forced block, counted as blocking);
      * ``transitions``: uncontrolled moves ``(from, to, rate)`` or ``(from, to, rate, drops)``,
        ``drops`` being the number of admitted sessions the move terminates early (session
        ends, channel changes, handovers; a self-loop may carry drops, e.g. a handover
        arrival that cannot be carried).

    Variables: the state-action frequencies x(s, k, admit) = y[s, k] and
    x(s, k, block) = p[s] - y[s, k], with p[s] the long-run probability of s (one decision
    per request type, so both actions of type k share p[s]). The LP is

        minimise    sum_{s,k} w_k lam[s,k] (p[s] - y[s,k])            (refused requests per time)
        subject to  balance, for every state t:
                      p[t] sum_{u != t} q(t, u) + sum_k lam[t,k] y[t,k]  [admit_to[t,k] != t]
                    = sum_{s != t} p[s] q(s, t) + sum_{(s,k): admit_to[s,k] = t != s} lam[s,k] y[s,k]
                    sum_s p[s] = 1,   0 <= y[s,k] <= p[s],   y[s,k] = 0 where admit_to = -1
                    sum_{moves} rate * drops * p[from] <= eps * sum_{s,k} lam[s,k] y[s,k]

    The last line is P(dropped | admitted) = drop rate / admission rate <= eps, made linear
    by multiplying through by the admission rate. With ``reference_rate`` it becomes
    drop rate <= eps * reference_rate instead, e.g. handover dropping probability when the
    drops are refused handovers (reference_rate = the handover arrival rate).

    The objective is the rate of refused requests (weighted by ``weights``, default 1). When
    the request rates do not depend on the state this is (total request rate) x blocking,
    so it minimises blocking exactly; with state-dependent request rates it minimises the
    refusal rate, which is what a ratio objective would need a fractional LP for.

    Returns the policy y / p (0 in states the optimum never visits), its blocking and its
    dropping. Raises ValueError when no policy meets eps (even blocking everything that
    is controllable leaves uncontrolled drops above the bound).
    """
    lam, to, src, dst, rate, drops, was_1d = _model(request_rates, admit_to, transitions)
    S, K = lam.shape
    w = np.ones(K) if weights is None else np.asarray(weights, dtype=float)
    # the variables: z = [p_0..p_{S-1}, y_{0,0}, y_{0,1}, ..., y_{S-1,K-1}]

    a_eq, b_eq = _balance(lam, to, src, dst, rate)
    a_ub, b_ub = _capacity_and_drops(lam, src, rate, drops, eps, reference_rate)

    cost = np.concatenate([(lam * w).sum(1), -(lam * w).ravel()])
    bounds = [(0, None)] * S + [(0, 0) if to[s, k] < 0 else (0, None) for s in range(S) for k in range(K)]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0:
        raise ValueError(f"the admission LP has no solution ({res.message}). Fix: raise eps; the uncontrolled "
                         "drops alone may already exceed it.")
    p = np.clip(res.x[:S], 0.0, None)
    y = np.clip(res.x[S:].reshape(S, K), 0.0, None)
    return _solution(lam, p / p.sum(), y / p.sum(), src, rate, drops, reference_rate, was_1d)


def evaluate_admission_policy(request_rates, admit_to, transitions, admit, *,
                              reference_rate: float | None = None) -> CellAdmissionSolution:
    """Measures of a given stationary policy (``admit`` = P(admit | state[, type])) on the same
    model as ``admission_lp``, by building the generator and solving pi Q = 0 directly: an
    independent route to the numbers the LP reports."""
    lam, to, src, dst, rate, drops, was_1d = _model(request_rates, admit_to, transitions)
    S, K = lam.shape
    a = np.asarray(admit, dtype=float).reshape(S, K)
    a = np.where(to < 0, 0.0, a)
    Q = np.zeros((S, S))
    np.add.at(Q, (src, dst), rate)
    for s in range(S):
        for k in range(K):
            if to[s, k] >= 0:
                Q[s, to[s, k]] += lam[s, k] * a[s, k]
    np.fill_diagonal(Q, 0.0)
    np.fill_diagonal(Q, -Q.sum(1))
    p = ctmc_stationary(Q)
    return _solution(lam, p, a * p[:, None], src, rate, drops, reference_rate, was_1d)
