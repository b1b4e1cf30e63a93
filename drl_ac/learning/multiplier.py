"""Automatic Lagrange multiplier by projected dual ascent on the measured violation.

    lam <- max(0, lam + eta * (v - eps))

v is the violation P(d > d_ub | A) of recent greedy accepted decisions. Updated every
``every`` environment steps, on a slower timescale than the Q updates. The PI variant adds
a proportional term, lam = max(0, I + kp * (v - eps)), I <- max(0, I + eta * (v - eps)),
which damps the oscillation plain dual ascent shows when the Q-network lags behind lam.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LagrangeMultiplier:
    eps: float
    lam: float = 1.0
    eta: float = 2.0
    kp: float = 0.0  # > 0 turns on the proportional term (PI control)
    every: int = 10
    integral: float | None = None

    def __post_init__(self) -> None:
        if self.integral is None:
            self.integral = self.lam

    def update(self, violation: float) -> float:
        error = violation - self.eps
        self.integral = max(0.0, self.integral + self.eta * error)
        self.lam = max(0.0, self.integral + self.kp * error)
        return self.lam

    def state_dict(self) -> dict:
        return {"lam": self.lam, "integral": self.integral}

    def load_state_dict(self, state: dict) -> None:
        self.lam, self.integral = float(state["lam"]), float(state["integral"])
