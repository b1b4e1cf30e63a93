import pytest

from drl_ac.learning.multiplier import LagrangeMultiplier


@pytest.mark.parametrize("kp", [0.0, 5.0])
def test_multiplier_rises_above_eps_and_falls_to_zero_when_slack(kp):
    m = LagrangeMultiplier(eps=0.1, lam=1.0, eta=2.0, kp=kp)
    values = [m.update(0.2) for _ in range(10)]
    assert all(b > a for a, b in zip(values, values[1:], strict=False)) and values[-1] > 1.0
    assert m.integral == pytest.approx(1.0 + 10 * 2.0 * 0.1)
    for _ in range(200):
        m.update(0.0)
    assert m.lam == 0.0 and m.integral == 0.0


def test_dual_ascent_step_by_hand():
    m = LagrangeMultiplier(eps=0.1, lam=2.0, eta=4.0)
    assert m.update(0.15) == pytest.approx(2.0 + 4.0 * 0.05)
    assert m.update(0.05) == pytest.approx(2.2 - 4.0 * 0.05)
