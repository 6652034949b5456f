# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The model zoo's CI subset: bench/model_zoo.py's `ci` group, each model
exported, run for one DistOpt step and compared with PyTorch's own step
through the script's own functions (the same code that writes
docs/reference/model-coverage.md), one subprocess per model under a
time limit. The whole zoo runs on demand:
`build/venv/bin/python bench/model_zoo.py --out docs/reference/model-coverage.md`.
"""

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_zoo():
    spec = importlib.util.spec_from_file_location(
        "model_zoo", os.path.join(ROOT, "bench", "model_zoo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


zoo = _load_zoo()
CI_MODELS = [s.name for s in zoo.select(["ci"])]
# Per model: export, compile at -O0 and one step take 5-40 s here.
TIMEOUT = 240


@pytest.mark.parametrize("name", CI_MODELS)
def test_ci_model_exports_and_equals_pytorch(name, tmp_path):
    row = zoo.run_in_subprocess(name, TIMEOUT, log_dir=str(tmp_path))
    log = (tmp_path / f"{name.replace(':', '_')}.log").read_text()
    assert row["status"] == "ok", \
        f"{name}: {zoo._status_cell(row)}\n{json.dumps(row, default=str)}\n{log[-3000:]}"
    assert row["rel_error"] <= zoo.RTOL
    assert row["export_s"] > 0 and row["compile_s"] > 0


def test_ci_group_covers_distinct_families():
    sources = {zoo.MODELS[n].source for n in CI_MODELS}
    assert len(CI_MODELS) >= 4 and {"torchvision", "hf", "nn"} <= sources


def test_compare_flags_a_wrong_array():
    import numpy as np
    want = {"w": np.array([1.0, -2.0]), "b": np.zeros(3)}
    err, worst, ok = zoo.compare(dict(want), 0.5, 0.5, want)
    assert ok and err == 0
    err, worst, ok = zoo.compare({"w": np.array([1.0, -2.001]), "b": np.zeros(3)},
                                 0.5, 0.5, want)
    assert not ok and worst == "w" and err == pytest.approx(5e-4, rel=1e-4)
    err, worst, ok = zoo.compare({"w": want["w"]}, 0.5, 0.5, want)
    assert not ok and worst == "b (missing)"
    # A bias a step leaves at zero up to rounding.
    assert zoo.compare({"w": want["w"], "b": np.full(3, 1e-12)}, 0.5, 0.5,
                       want)[2]


def test_sensitivity_of_a_well_conditioned_step():
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                torch.nn.Linear(8, 3)).double()
    x = torch.randn(5, 4, dtype=torch.float64)
    y = torch.randint(0, 3, (5,))
    moved, where = zoo.sensitivity(model, (x,), y)
    # 100 ulps of float64 move a tanh MLP's step by about that much.
    assert 0 < moved < 1e-11, (moved, where)


def _rows():
    base = {"source": "nn", "input": "4x8", "dtype": "float32", "note": ""}
    return [
        dict(base, model="a", status="ok", params=420, export_s=1.0,
             compile_s=2.0, rel_error=1e-7),
        dict(base, model="b", status="export-fails", op="aten.foo.default",
             module_path="act (Foo)", error="UnsupportedOpError: ..."),
        dict(base, model="c", status="export-fails", op="aten.foo.default",
             module_path=None, error="UnsupportedOpError: ..."),
        dict(base, model="d", status="timeout", error="no result within 5 s"),
        dict(base, model="e", status="mismatch", rel_error=0.25,
             worst="fc.weight", params=10, export_s=1.0, compile_s=1.0),
    ]


def test_table_summary_and_causes():
    rows = _rows()
    assert zoo.summary(rows) == (1, 2, 5)
    causes = zoo.failure_causes(rows)
    assert causes[0] == ("export: `aten.foo.default`", ["b", "c"])
    assert {c for c, _ in causes[1:]} == {
        "step differs from PyTorch's", "timeout: no result within 5 s"}
    meta = {"date": "D", "commit": "C", "command": "X", "torch": "t",
            "torchvision": "v", "timm": "m", "transformers": "h",
            "machine": "M"}
    table = zoo.render_table(rows, meta)
    assert "**1 of 5** models export and equal PyTorch's step (2 of 5 export)" \
        in table
    assert "| b | nn |" in table and "`aten.foo.default` in act (Foo)" in table
    assert "mismatch: fc.weight off by 0.25" in table


def test_update_guide_rewrites_only_its_region(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text(f"# T\nbefore\n{zoo.GUIDE_BEGIN}\nold\n{zoo.GUIDE_END}\nafter\n")
    meta = {"date": "D"}
    zoo.update_guide(_rows(), meta, path=str(guide))
    text = guide.read_text()
    assert text.startswith("# T\nbefore\n" + zoo.GUIDE_BEGIN)
    assert text.endswith(zoo.GUIDE_END + "\nafter\n")
    assert "old" not in text
    assert "- b (nn): the export stops at `aten.foo.default` in act (Foo)" in text
    assert "- a (nn)" not in text
    # Twice is the same as once.
    zoo.update_guide(_rows(), meta, path=str(guide))
    assert guide.read_text() == text
    bare = tmp_path / "bare.md"
    bare.write_text("# no markers\n")
    with pytest.raises(SystemExit, match="no <!-- model-coverage:begin -->"):
        zoo.update_guide(_rows(), meta, path=str(bare))


def test_select_groups_and_unknown_names():
    assert [s.name for s in zoo.select(["nn:gru", "nn:lstm"])] == \
        ["nn:lstm", "nn:gru"]
    assert {s.source for s in zoo.select(["hf"])} == {"hf"}
    with pytest.raises(SystemExit, match="no model or group 'nope'"):
        zoo.select(["nope"])
