"""The blockwise-causal (+bca) and randomized-positions rows (posbench/evaluation/variants/window.py,
randpos.py) as evaluation rows."""

import numpy as np
import torch

from posbench.evaluation.settings import EvalConfig
from posbench.model.transformer import ModelConfig, build_model


def test_evaluation_rows_for_bca_and_randomized_positions():
    from posbench.evaluation.perplexity import evaluate_model

    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2)
    val = np.random.default_rng(0).integers(0, 256, 3000).astype(np.uint8)
    ev = EvalConfig(**dict(multiples=[1, 2, 8], protocols=["nonoverlapping"], scored_tokens=128, first_scored=128,
                               stride=None, target_tokens=None, target_docs=8, batch_tokens=256, rope_scaling=[],
                               rope_factor=None, bca=["xpos"]))
    xpos = build_model(cfg, "xpos", {}, 8)
    variants = {r["variant"] for r in evaluate_model(xpos, val, 8, ev, torch.device("cpu"), progress=False)[0]}
    assert variants == {"xpos", "xpos+bca"}
    learned = build_model(cfg, "learned", {}, 8, max_position=32)  # trained on positions sampled from [0, 32)
    records = evaluate_model(learned, val, 8, ev, torch.device("cpu"), progress=False)[0]
    by = {(r["variant"], r["length"]): r for r in records}
    assert by["learned+randpos", 16]["ppl"] is not None and by["learned+randpos", 64]["ppl"] is None
    assert by["learned", 16]["ppl"] is not None and by["learned+randpos", 16]["ppl"] != by["learned", 16]["ppl"]
