"""The cell's observation (envs/systems/cell/observation.py): saved and read back as the cell's
own encoding, and a network's saved encoding (which held ``cell_bands: -1``) read as a network's."""

from __future__ import annotations

import numpy as np

from envs import Driver, ObservationEncoding, load_spec
from envs.systems.cell.observation import CellEncoding


def test_a_saved_cell_encoding_reads_back_as_the_cells_own():
    enc = load_spec("cell_5g").system.encoding()
    back = ObservationEncoding.from_dict(enc.to_dict())
    assert type(back) is CellEncoding and back == enc and back.cell_bands == 3


def test_a_network_encoding_saved_with_the_old_cell_field_reads_as_a_network():
    saved = {**load_spec("paper_tandem").system.encoding(True).to_dict(), "cell_bands": -1}
    back = ObservationEncoding.from_dict(saved)
    assert type(back) is ObservationEncoding and back == load_spec("paper_tandem").system.encoding(True)


def test_the_layout_reads_the_columns_the_cell_writes():
    spec = load_spec("cell_5g")
    driver = Driver(spec, 16, seed=3)
    obs = driver.reset()
    for _ in range(300):
        obs, *_ = driver.step(np.ones(16, np.int64))
    lay = driver.encoding.cell_layout()
    st = driver.engine.state
    assert obs.shape == (16, driver.encoding.width)
    assert np.array_equal(lay.prbs_in_use(obs), st.cell_used) and np.array_equal(obs[:, lay.ues], st.cell_ues)
    assert np.array_equal(lay.ue_type(obs), driver.engine.arriving)


def test_a_cell_encoding_refuses_negative_bands():
    import pytest

    with pytest.raises(ValueError, match="cell_bands: CQI bands observed per type, 0 or more, got -1"):
        CellEncoding(1, cell_bands=-1)
