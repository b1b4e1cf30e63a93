"""Processor-sharing stations against theory, with the figures the README quotes.

    python experiments/ps_checks.py

M/G/1-PS mean sojourn E[S] / (1 - rho) for three size laws (insensitivity), the M/M/1-PS
sojourn of a job of size x, x / (1 - rho), by size bin, M/G/3-PS against M/M/3, and a tandem
of PS stations against the product form. Standard errors are over 400 independent instances.
"""

import numpy as np

from envs import Driver, NetworkSpec
from envs.distributions import Deterministic, Exponential, HyperExponential
from envs.queueing import mg1_ps_mean_sojourn, mgc_ps_mean_sojourn
from envs.rollout import accept_all, collect


def run(spec, B=400, warm=2000, steps=4000, seed=11):
    done, _ = collect(Driver(spec, B, seed=seed), accept_all, steps, warm)
    m = np.bincount(done.env, weights=done.sojourn, minlength=B) / np.bincount(done.env, minlength=B)
    return done, m.mean(), m.std(ddof=1) / np.sqrt(B)

lam = 0.7
for size in (Exponential(1.0), Deterministic(1.0), HyperExponential(1.0, 4.0)):
    spec = NetworkSpec.tandem([1], [size], Exponential(1 / lam), d_ub=50, eps=0.1, kind="ps")
    _, est, se = run(spec)
    print(f"M/G/1-PS rho 0.7 scv {size.scv:g}: simulated {est:.4f} +- {se:.4f}, theory {mg1_ps_mean_sojourn(lam, 1.0):.4f}")
spec = NetworkSpec.tandem([1], [Exponential(1.0)], Exponential(1 / 0.6), d_ub=50, eps=0.1, kind="ps")
done, _, _ = run(spec)
x = done.service[:, 0]
for lo, hi in ((0.0, 0.5), (0.5, 1.5), (1.5, 3.0), (3.0, np.inf)):
    m = (x >= lo) & (x < hi)
    ratio = done.sojourn[m].sum() / x[m].sum()
    print(f"M/M/1-PS rho 0.6, sizes in [{lo}, {hi}): E[T]/E[x] = {ratio:.4f} (theory 1/(1-rho) = {1/0.4:.4f}, {m.sum()} jobs)")
spec = NetworkSpec.tandem([3], [HyperExponential(1.0, 5.0)], Exponential(1 / 2.1), d_ub=50, eps=0.1, kind="ps")
_, est, se = run(spec)
print(f"M/G/3-PS rho 0.7 scv 5: simulated {est:.4f} +- {se:.4f}, theory (= M/M/3) {mgc_ps_mean_sojourn(3, 2.1, 1.0):.4f}")
means = [1.2, 0.8, 1.6]
spec = NetworkSpec.tandem([1, 1, 1], [Exponential(m) for m in means], Exponential(2.0), d_ub=50, eps=0.1, kind="ps")
_, est, se = run(spec)
print(f"PS tandem (rho 0.6, 0.4, 0.8): simulated {est:.4f} +- {se:.4f}, product form {sum(mg1_ps_mean_sojourn(0.5, m) for m in means):.4f}")
