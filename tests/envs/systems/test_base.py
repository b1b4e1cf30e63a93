"""The registry, ``spec.system``, headlines and the systems' language."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from envs import NetworkSpec, SpecError, load_spec
from envs.spec import SCENARIO_DIR, available_scenarios
from envs.systems import BLOCKS, KINDS, SYSTEMS, Headline, System, system_class, system_of

EXPECTED = {"acyclic": "network", "paper_acyclic": "network", "paper_tandem": "network", "tandem": "network",
            "mmc_c1": "network", "mmc_c3": "network", "mmc_c5_overload": "network",
            "cell_5g": "cell", "cell_erlang": "cell", "cell_guard": "cell", "cell_multirate": "cell",
            "cell_small": "cell", "redundancy_ps": "redundancy", "pools": "pools", "pools_rescue": "pools",
            "redundancy_ps_daily": "redundancy", "pools_daily": "pools", "paper_tandem_step": "network",
            "paper_tandem_poisson": "network"}
CONTROL_WORDS = ("reject", "violation", "lam", "accept")  # admission words a control system never says


def _yaml(name: str) -> dict:
    return yaml.safe_load((SCENARIO_DIR / f"{name}.yaml").read_text())


def test_registry_names_blocks_and_kinds():
    assert list(SYSTEMS) == ["network", "cell", "redundancy", "pools"]
    assert {name: cls.block for name, cls in SYSTEMS.items()} == {
        "network": None, "cell": "cell", "redundancy": "redundancy", "pools": "pools"}
    assert set(BLOCKS) == {"cell", "redundancy", "pools"}
    for cls in SYSTEMS.values():
        assert issubclass(cls, System) and cls.kinds and set(cls.kinds) <= set(KINDS)


def test_every_packaged_scenario_names_its_system():
    assert set(available_scenarios()) == set(EXPECTED)
    for name, system in EXPECTED.items():
        spec = load_spec(name)
        sys_ = spec.system
        assert sys_.name == system and isinstance(sys_, SYSTEMS[system])
        assert sys_.spec is spec and system_of(spec).name == system
        assert system_class(_yaml(name)) is SYSTEMS[system]
        assert sys_.kind in type(sys_).kinds
        assert spec.system_block == sys_.block and (sys_.block is None) == (spec.block is None)
        assert sys_.headline.measure == next(iter(sys_.measures))  # the headline's measure comes first
        line = sys_.describe()
        assert "\n" not in line and line.startswith(f"{name}: ")
        assert sys_.reward_rule() in ("admission", "blocking", "response_time", "deadline")


def test_kinds_and_headline_keys():
    """Keys of drl_ac.evaluation.metrics: acceptance / violation, blocking / dropping, mean_delay."""
    h = {name: load_spec(name).system for name in ("paper_tandem", "cell_5g", "redundancy_ps", "pools")}
    assert {k: (s.kind, s.headline.measure, s.headline.sense, s.headline.constraint) for k, s in h.items()} == {
        "paper_tandem": ("admission", "acceptance", "max", "violation"),
        "cell_5g": ("loss", "blocking", "min", "dropping"),
        "redundancy_ps": ("control", "mean_delay", "min", None),
        "pools": ("control", "mean_delay", "min", None)}
    assert h["cell_5g"].headline.text(0.02) == "minimise blocking s.t. P(dropped | admitted) <= 0.02"
    assert h["pools"].headline.text() == "minimise mean response time"
    assert h["paper_tandem"].headline.better(0.9, 0.8) and h["pools"].headline.better(1.0, 2.0)
    deadline = _yaml("redundancy_ps") | {"objective": "deadline"}
    spec = NetworkSpec.from_dict(deadline)
    assert (spec.system.kind, spec.system.headline.measure, spec.system.headline.sense) == ("control", "throughput",
                                                                                            "max")
    with pytest.raises(ValueError, match="sense"):
        Headline("acceptance", "up", None, "acceptance")


def test_headline_and_measures_are_keys_the_metrics_report():
    from drl_ac.evaluation.metrics import evaluate
    for name in ("paper_tandem", "cell_small", "redundancy_ps", "pools"):
        spec = load_spec(name)
        action = 1 if spec.system.kind != "control" else 0
        m = evaluate(lambda obs, a=action: np.full(obs.shape[0], a, np.int64), spec, arrivals=1000, num_envs=10,
                     warmup=20)
        h = spec.system.headline
        assert h.measure in m and (h.constraint is None or h.constraint in m), name
        assert set(spec.system.measures) <= set(m), name


def test_control_systems_speak_their_language():
    overloaded = {"redundancy_ps": ("arrival", "rate", 50.0), "pools": ("arrival", "rate", 5.0)}
    for name, (key, sub, value) in overloaded.items():
        cfg = _yaml(name)
        spec = NetworkSpec.from_dict(cfg)
        assert spec.system.kind == "control" and spec.system.stability_problem() is None
        bad = copy.deepcopy(cfg)
        bad[key][sub] = value
        sys_ = NetworkSpec.from_dict(bad).system
        problem = sys_.stability_problem()
        assert problem is not None and "\n" not in problem
        for text in (problem, sys_.describe(), sys_.headline.label, *sys_.measures.values()):
            assert not any(w in text.lower() for w in CONTROL_WORDS), text


def test_one_system_per_description():
    red, pools, cell = _yaml("redundancy_ps"), _yaml("pools"), _yaml("cell_small")
    with pytest.raises(SpecError, match=r"^pools: cannot be given with 'redundancy'"):
        NetworkSpec.from_dict(red | {"pools": pools["pools"]})
    with pytest.raises(SpecError, match=r"^redundancy: cannot be given with 'cell'"):
        NetworkSpec.from_dict(cell | {"redundancy": red["redundancy"]})
    spec = load_spec("redundancy_ps")  # a spec holds one block, of a known system
    with pytest.raises(SpecError, match=r"^fork: no system has this block.*register the system first"):
        NetworkSpec(**{f: getattr(spec, f) for f in spec.__dataclass_fields__} | {"system_block": "fork"})


def test_spec_round_trips_through_its_system():
    for name in EXPECTED:
        spec = load_spec(name)
        back = NetworkSpec.from_dict(spec.to_dict())
        assert back.system.name == spec.system.name
        if spec.system.name != "cell":  # a cell's CQI laws are renormalised on every read (envs.systems.cell.spec)
            assert back.to_dict() == spec.to_dict()
        if spec.system.block is not None:
            assert spec.system.block in spec.to_dict()


def test_check_stable_and_stability_warning_ask_the_system():
    spec = load_spec("mmc_c5_overload")
    assert spec.stability_warning() == spec.system.stability_problem() == str(spec.system.stability_error())
    with pytest.raises(SpecError) as err:
        spec.check_stable()
    assert str(err.value) == spec.stability_warning()
    for name in ("paper_tandem", "cell_5g", "redundancy_ps", "pools"):
        load_spec(name).check_stable()
