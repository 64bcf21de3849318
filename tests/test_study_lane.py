"""stabsim.study.lane: a run of many studies hands studies from the back of its list to a worker
process; every study is computed once, to the same data as in one lane, its summary says where
it ran, a worker that dies gives its study back, an interrupt stops the worker."""

from __future__ import annotations

import multiprocessing
import os
import signal

import numpy as np
import pytest
import xarray as xr

from stabsim.cli import WARM_STUDIES, main
from stabsim.study import load_study
from stabsim.study.index import default_studies_dir
from stabsim.study.lane import ONE_LANE_ENV, StudyLane, take_studies

# five cheap built-in studies (quick profile): enough for `stabsim run` to start the lane
STUDIES = ["p0_thm1", "p0_thm4_sigma", "p1_thm1_rate", "p1_thm2_rate", "p4_lemma14a"]


def _specs(ids):
    return [load_study(default_studies_dir() / f"{sid}.toml", "quick") for sid in ids]


def _run(capsys, out, monkeypatch, one_lane):
    monkeypatch.setenv("STABSIM_NO_WARMUP", "1")
    monkeypatch.setenv(ONE_LANE_ENV, "1" if one_lane else "0")
    capsys.readouterr()
    code = main(["run", *STUDIES, "--quick", "--out", str(out), "--no-progress", "--no-analyse"])
    return code, capsys.readouterr().out


def _values(path):
    with xr.open_dataset(path) as ds:
        return {k: (v.dims, np.asarray(v.values)) for k, v in ds.variables.items()}


def test_two_lanes_compute_the_data_of_one(tmp_path, capsys, monkeypatch):
    assert len(STUDIES) >= WARM_STUDIES
    code_2, out_2 = _run(capsys, tmp_path / "two", monkeypatch, one_lane=False)
    code_1, out_1 = _run(capsys, tmp_path / "one", monkeypatch, one_lane=True)
    assert code_2 == 0 and code_1 == 0
    done_2 = [ln.split(":")[0] for ln in out_2.splitlines() if " chunks (" in ln]
    assert sorted(done_2) == sorted(STUDIES)                            # each study once
    in_lane = [ln.split(":")[0] for ln in out_2.splitlines() if "(second lane" in ln]
    assert in_lane and in_lane[0] == STUDIES[-1]                        # the lane starts from the back
    assert STUDIES[0] not in in_lane                                    # and the front is this process's
    assert "(second lane" not in out_1
    for sid in STUDIES:   # the same numbers, whichever process computed them
        a, b = _values(tmp_path / "two" / sid / "data.nc"), _values(tmp_path / "one" / sid / "data.nc")
        assert a.keys() == b.keys()
        for k in a:
            assert a[k][0] == b[k][0] and np.array_equal(a[k][1], b[k][1], equal_nan=a[k][1].dtype.kind == "f"), (sid, k)


def test_a_worker_that_dies_gives_its_study_back(tmp_path, capsys):
    specs = _specs(STUDIES[:3])
    with StudyLane(specs, tmp_path, {}) as lane:
        for proc in list(lane._pool._processes.values()):   # the worker dies at once
            os.kill(proc.pid, signal.SIGKILL)
        order = [(spec.id, where) for spec, where in take_studies(specs, lane)]
    # every study handed to this process, in order, the dead worker's last one included
    assert order == [(s.id, None) for s in specs]
    assert "computed here" in capsys.readouterr().err


def test_an_interrupt_stops_the_worker(tmp_path, capsys):
    specs = _specs(STUDIES[:3])
    with pytest.raises(KeyboardInterrupt):
        with StudyLane(specs, tmp_path, {}) as lane:
            assert not lane._idle.is_set()   # the last study handed out at once
            raise KeyboardInterrupt
    assert not [p for p in multiprocessing.active_children() if p.is_alive()]
    assert "computed here" not in capsys.readouterr().err   # an interrupt gives nothing back


def test_no_lane_where_it_cannot_help(tmp_path, monkeypatch):
    specs = _specs(STUDIES[:3])
    monkeypatch.setenv(ONE_LANE_ENV, "1")
    assert StudyLane.start(specs, tmp_path, {}) is None                  # switched off
    monkeypatch.delenv(ONE_LANE_ENV)
    assert StudyLane.start(specs[:2], tmp_path, {}) is None              # nothing to share
    assert StudyLane.start(specs, tmp_path, {}, scheduler="local:2") is None   # dask spreads the chunks
    assert StudyLane.start(specs, tmp_path, {}, backend="cuda") is None  # one device
