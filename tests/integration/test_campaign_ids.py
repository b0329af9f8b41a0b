"""A cell's experiments keep naming each other in the campaign's store: a recovery cell
that measured its throughput by a search first names that search by its id in the
scratch store; once the coordinator writes both into the campaign's store (where the ids
differ), the recovery names the search's new id."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from netassay.campaign import execute, order, spec
from netassay.campaign.worker import CellResult, read_scratch
from netassay.store.db import Store

FILE = """[campaign]
name = "rec"
method = "recovery"
repetitions = 1
seed = 1
[fixed]
throughput = "search"
[factors]
sut = ["router", "xdp-router"]
"""


def _cell(c: spec.Campaign, slot: order.Slot) -> CellResult:
    """What a recovery cell's scratch store holds: its own experiment (first) and the
    search it measured its throughput with, which it names by the scratch id."""
    scratch = Path(tempfile.mkdtemp(prefix="netassay-scratch-")) / "cell.db"
    with Store(scratch) as st:
        rec_id, _ = st.add_experiment(key="r", kind="recovery", source="netassay-testbed",
                                      label="r", config={}, metadata={})  # fmt: skip
        search_id, _ = st.add_experiment(key="s", kind="search", source="netassay-testbed",
                                         label="s", config={}, metadata={})  # fmt: skip
        named = {"throughput_from": {"search_experiment": search_id, "goal": "pdr:0.005"}}
        st.update_config(rec_id, named)
    return CellResult(slot.key(c.name), "t1", "netassay-t1", 1.0, read_scratch(scratch))


def test_a_cells_experiment_names_its_search_by_its_id_in_the_campaign_store(tmp_path):
    c = spec.parse(FILE, "rec.toml")
    db = tmp_path / "camp.db"
    with Store(db) as st:
        for k in ("earlier", "earlier-2"):  # this store's ids start past the scratch's two
            st.add_experiment(key=k, kind="sweep", source="netassay-testbed", label=k,
                              config={}, metadata={})  # fmt: skip
        cid, seed = execute._start(st, c, False, str(db))
        for slot in order.run_order(len(c.cells), c.repetitions, seed):
            execute.write_cell(st, c, cid, seed, slot, _cell(c, slot))
        searches = {e.key: e.id for e in st.experiments() if e.kind == "search"}
        for e in st.experiments():
            if e.kind != "recovery":
                continue
            named = e.config["throughput_from"]["search_experiment"]
            assert named == searches[f"{e.key}-2"] and named != 2, (e.key, named, searches)
    assert json.dumps(execute.renumbered({"a": [{"search_experiment": 2}]}, {2: 7})) == (
        '{"a": [{"search_experiment": 7}]}'
    )
