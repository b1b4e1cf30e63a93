"""The cost curves' generated networks are what their tables say (experiments/cost_curves.py;
tests/test_docs.py runs the documented command itself)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def cost_curves(experiment):
    return experiment("cost_curves")


@pytest.mark.parametrize("stations", [3, 30])
def test_a_generated_tandem_visits_every_station_once_at_the_load(cost_curves, stations):
    spec = cost_curves.tandem(stations, 0.8)
    assert spec.num_stations == stations
    np.testing.assert_allclose(spec.visit_ratios(), np.ones(stations))
    np.testing.assert_allclose(spec.utilization(), np.full(stations, 0.8))


@pytest.mark.parametrize("stations", [3, 10, 100])
def test_a_random_acyclic_network_is_feed_forward_with_every_station_at_the_load(cost_curves, stations):
    spec = cost_curves.random_acyclic(stations, 0.7, seed=stations)
    routing = np.asarray(spec.routing)[:, :stations]
    assert np.allclose(np.tril(routing), 0.0)  # only to later stations: no cycles
    assert np.all(routing.sum(axis=1) <= 1.0 + 1e-12)
    np.testing.assert_allclose(spec.utilization()[spec.visit_ratios() > 0], 0.7)


def test_ciw_is_optional_and_counts_visits_of_the_network(cost_curves):
    pytest.importorskip("ciw")
    spec = cost_curves.tandem(3, 0.5)
    assert cost_curves.ciw_visits_per_second(spec, 600) > 0
