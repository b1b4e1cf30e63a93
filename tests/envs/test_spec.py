"""Network descriptions: what loads, and every kind of bad input failing clearly."""

import numpy as np
import pytest

from envs import NetworkSpec, SpecError, load_spec, make_vector
from envs.distributions import make_distribution

BASE = {
    "arrival": {"dist": "exponential", "rate": 0.5},
    "stations": [{"name": "a", "servers": 2, "service": {"dist": "gamma", "mean": 1.0, "scv": 0.5}},
                 {"name": "b", "servers": 1, "service": {"dist": "exponential", "mean": 0.5}}],
    "routing": {"a": {"b": 0.5, "exit": 0.5}},
    "d_ub": 5, "eps": 0.1,
}


def with_(path, value):
    import copy
    cfg = copy.deepcopy(BASE)
    target = cfg
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return cfg


def test_shipped_scenarios_load_with_paper_parameters():
    tandem = load_spec("paper_tandem")
    assert tandem.servers.tolist() == [3, 5, 2]
    assert [s.service.mean for s in tandem.stations] == [3.0, 5.0, 2.0]
    assert tandem.arrival_rate == pytest.approx(0.95)
    assert (tandem.d_ub, tandem.eps, tandem.lam, tandem.delay) == (15, 0.1, 8, "paper")
    np.testing.assert_allclose(tandem.utilization(), 0.95)
    acyclic = load_spec("paper_acyclic")
    np.testing.assert_allclose(acyclic.visit_ratios(), [1, 0.67, 0.33, 1])
    assert (acyclic.d_ub, acyclic.lam) == (20, 5)
    assert load_spec("tandem").delay == "sojourn" and load_spec("tandem").d_ub == 25
    assert load_spec("acyclic").d_ub == 35 and load_spec("acyclic").lam is None


def test_yaml_roundtrip_and_overrides(tmp_path):
    spec = NetworkSpec.from_dict(BASE)
    again = NetworkSpec.from_dict(spec.to_dict())
    assert again == spec
    assert spec.with_overrides(eps=0.05, lam="auto").eps == 0.05
    path = tmp_path / "net.yaml"
    import yaml
    path.write_text(yaml.safe_dump(BASE))
    assert load_spec(path, d_ub=7).d_ub == 7


def test_empirical_distribution_from_file(tmp_path):
    f = tmp_path / "times.txt"
    f.write_text("1.0\n2.0\n3.0\n")
    d = make_distribution({"dist": "empirical", "file": str(f)}, "service")
    assert d.mean == pytest.approx(2.0)
    draws = d.sample(np.random.default_rng(0), 1000)
    assert set(np.unique(draws)) == {1.0, 2.0, 3.0}


@pytest.mark.parametrize("cfg, dist", [
    ({"dist": "gamma", "mean": 2.0, "scv": 0.5}, None),
    ({"dist": "lognormal", "mean": 2.0, "scv": 1.5}, None),
    ({"dist": "hyperexponential", "mean": 2.0, "scv": 4.0}, None),
    ({"dist": "lomax", "mean": 2.0, "scv": 3.0}, None),
    ({"dist": "deterministic", "mean": 2.0}, None),
    ({"dist": "exponential", "rate": 0.5}, None),
])
def test_distribution_moments_match_mean_and_scv(cfg, dist):
    d = make_distribution(cfg, "service")
    x = d.sample(np.random.default_rng(1), 2_000_000)
    assert x.mean() == pytest.approx(d.mean, rel=0.01)
    if d.scv < 2:  # heavy tails make the sample SCV converge too slowly to test
        assert x.var() / x.mean() ** 2 == pytest.approx(d.scv, abs=0.03)
    assert d.mean == pytest.approx(2.0)


@pytest.mark.parametrize("cfg, field", [
    (with_(["stations", 0, "servers"], 0), "stations[0].servers"),
    (with_(["stations", 0, "servers"], 1.5), "stations[0].servers"),
    (with_(["stations", 1, "service"], {"dist": "exponential", "rate": -1}), "stations[1].service.rate"),
    (with_(["stations", 0, "service"], {"dist": "gamma", "mean": 1, "scv": 0}), "stations[0].service.scv"),
    (with_(["stations", 0, "service"], {"dist": "hyperexponential", "mean": 1, "scv": 0.5}),
     "stations[0].service.scv"),
    (with_(["stations", 0, "service"], {"dist": "lomax", "mean": 1, "scv": 0.9}), "stations[0].service.scv"),
    (with_(["stations", 0, "service"], {"dist": "weibull", "mean": 1}), "stations[0].service.dist"),
    (with_(["routing", "a"], {"b": 0.5, "exit": 0.4}), "routing.a"),
    (with_(["routing", "a"], {"c": 1.0}), "routing.a.c"),
    (with_(["routing", "b"], {"a": 1.0}), "routing"),  # a -> b -> a is a cycle
    (with_(["routing", "zz"], "exit"), "routing.zz"),
    (with_(["arrival"], {"dist": "gamma", "mean": 0, "scv": 1}), "arrival.mean"),
    (with_(["eps"], 1.5), "eps"),
    (with_(["d_ub"], -1), "d_ub"),
    (with_(["entry"], "nowhere"), "entry.nowhere"),
    (with_(["stations", 1, "service"], {"dist": "empirical", "file": "/no/such/file.txt"}),
     "stations[1].service.file"),
])
def test_bad_input_names_field_and_fix(cfg, field):
    with pytest.raises(SpecError) as err:
        NetworkSpec.from_dict(cfg)
    assert err.value.field == field
    assert "Fix:" in str(err.value)


def test_unknown_scenario_and_bad_delay_measure():
    with pytest.raises(SpecError, match="unknown scenario 'nope'.*paper_tandem"):
        load_spec("nope")
    with pytest.raises(SpecError, match="delay"):
        load_spec("paper_tandem", delay="mean")
    with pytest.raises(SpecError, match="cannot be overridden"):
        make_vector("paper_tandem", 2, rho=0.5)


def test_unstable_network_is_reported():
    spec = NetworkSpec.from_dict(with_(["arrival"], {"dist": "exponential", "rate": 3.0}))
    with pytest.raises(SpecError, match="load .* >= 1"):
        spec.check_stable()
    load_spec("paper_tandem").check_stable()
