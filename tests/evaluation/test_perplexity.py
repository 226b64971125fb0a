"""Per-token losses (posbench/evaluation/perplexity.py): kept only for rows beside their window
control ``+swaL`` and those controls, in the order ``token_layout`` gives, adding up to each
record's per-document and per-position numbers."""

import numpy as np
import pytest
import torch

from posbench.evaluation.perplexity import evaluate_model, far_context_pairs, token_layout
from posbench.evaluation.windows import WindowPlan
from posbench.model.transformer import ModelConfig, build_model
from posbench.store.rundir import per_position_key, token_loss_keys
from posbench.evaluation.resolved import ResolvedEval
from tests.evaluation.protocols.test_protocols import eval_cfg
from tests.helpers import split_of_documents


def test_rows_beside_their_window_control_and_those_controls_keep_per_token_losses():
    names = {"rope", "rope+swaL", "rope+yarn@4x", "rope+logn", "rope+logn+swaL", "rope+swa32"}
    assert far_context_pairs(names) == {"rope", "rope+swaL", "rope+logn", "rope+logn+swaL"}
    assert far_context_pairs({"rope", "rope+yarn@4x"}) == set()


def test_token_layout_lists_each_scored_token_by_window_then_position():
    # three windows of length 4 scoring 4, 2 and 1 final positions; units 0, 1, 1 in documents 7, 9
    plan = WindowPlan(ends=np.array([4, 8, 12]), scored=np.array([4, 2, 1]), min_context=0,
                      units=np.array([0, 1, 1]), unit_docs=np.array([7, 9]))
    doc, pos = token_layout(plan, 4)
    assert doc.tolist() == [0, 0, 0, 0, 1, 1, 1]  # index among the token set's documents (7 -> 0, 9 -> 1)
    assert pos.tolist() == [0, 1, 2, 3, 2, 3, 3]


@pytest.mark.parametrize("protocol", ["nonoverlapping", "sliding"])
def test_per_token_losses_add_up_to_the_records_and_the_per_position_curves(protocol):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2), "rope", {}, 8, 8).eval()
    val = split_of_documents([300, 200, 400, 250])
    cfg = eval_cfg(multiples=[1, 2, 4], protocols=[protocol], scored_tokens=None, stride=4, variants=["local"])
    kept: dict = {}
    records, per_pos = evaluate_model(model, ResolvedEval(cfg, 8, text=val), torch.device("cpu"), progress=False,
                                      token_losses=kept)
    assert {r["variant"] for r in records} == {"rope", "rope+swaL"}
    for r in records:
        loss_key, doc_key, pos_key = token_loss_keys(r["variant"], protocol, r["length"])
        loss, doc, pos = kept[loss_key].astype(float), kept[doc_key], kept[pos_key]
        assert kept[loss_key].dtype == np.float16 and len(loss) == r["tokens_scored"] == len(doc) == len(pos)
        assert np.bincount(doc, weights=loss, minlength=len(r["doc_nats"])) == pytest.approx(r["doc_nats"], rel=2e-3)
        curve = per_pos[per_position_key(r["variant"], protocol, r["length"])]
        seen = np.bincount(pos, minlength=r["length"]) > 0
        mean = np.bincount(pos, weights=loss, minlength=r["length"])[seen] / np.bincount(pos)[seen]
        assert mean == pytest.approx(curve[seen], abs=5e-3) and np.isnan(curve[~seen]).all()
    # at 1x the window holds every key: both passes score each token alike
    one = [token_loss_keys(v, protocol, 8)[0] for v in ("rope", "rope+swaL")]
    assert np.array_equal(kept[one[0]], kept[one[1]])


def test_no_per_token_losses_without_a_window_control():
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2), "rope", {}, 8, 8).eval()
    val = split_of_documents([300, 200, 400, 250])
    kept: dict = {}
    evaluate_model(model, ResolvedEval(eval_cfg(multiples=[1, 2], protocols=["nonoverlapping"], scored_tokens=None), 8,
                                       text=val), torch.device("cpu"), progress=False, token_losses=kept)
    assert kept == {}
