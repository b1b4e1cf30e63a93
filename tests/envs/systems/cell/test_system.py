"""The cell plugin: a loss system (never unstable), its headline, reward and observation."""

from __future__ import annotations

import math

import yaml

from envs import NetworkSpec, load_spec
from envs.spec import SCENARIO_DIR


def test_a_cell_is_never_unstable_even_far_overloaded():
    cfg = yaml.safe_load((SCENARIO_DIR / "cell_erlang.yaml").read_text())
    cfg["cell"]["types"][0]["arrival"] = {"dist": "poisson", "rate": 1000.0}
    spec = NetworkSpec.from_dict(cfg)
    assert spec.arrival_rate == 1000.0
    assert spec.system.stability_problem() is None and spec.system.stability_error() is None
    spec.check_stable()


def test_cell_goal_reward_and_engine_settings():
    spec = load_spec("cell_5g")
    sys_ = spec.system
    assert (sys_.name, sys_.block, sys_.kind) == ("cell", "cell", "loss")
    assert (sys_.headline.measure, sys_.headline.sense, sys_.headline.constraint) == ("blocking", "min", "dropping")
    assert sys_.reward_rule() == "blocking"
    assert sys_.engine_options() == {"probes": False}
    assert "106 PRBs" in sys_.describe() and "P(dropped | admitted) <= 0.02" in sys_.describe()
    assert not sys_.needs_deadline and math.isinf(spec.d_ub)
    assert type(sys_.routing()).__name__ == "CellDispatch"


def test_cell_observation_ignores_include_in_service():
    spec = load_spec("cell_5g")
    enc = spec.system.encoding(True)
    assert enc == spec.system.encoding(False)
    assert (enc.include_in_service, enc.cell_bands, enc.num_classes) == (False, 3, 3)
    assert enc.cell_layout().types == 3
