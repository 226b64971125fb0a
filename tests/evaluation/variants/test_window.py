"""The blockwise-causal (+bca) and randomized-positions rows (posbench/evaluation/variants/window.py,
randpos.py) as evaluation rows."""

import numpy as np
import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.evaluation.settings import EvalConfig
from posbench.model.transformer import ModelConfig, build_model
from posbench.evaluation.resolved import ResolvedEval


def test_evaluation_rows_for_bca_and_randomized_positions():
    from posbench.evaluation.perplexity import evaluate_model

    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2)
    val = np.random.default_rng(0).integers(0, 256, 3000).astype(np.uint8)
    ev = EvalConfig(**dict(multiples=[1, 2, 8], protocols=["nonoverlapping"], scored_tokens=128, first_scored=128,
                               stride=None, target_tokens=None, target_docs=8, batch_tokens=256, rope_scaling=[],
                               rope_factor=None, bca=["xpos"]))
    xpos = build_model(cfg, "xpos", {}, 8)
    variants = {r["variant"] for r in evaluate_model(xpos, ResolvedEval(ev, 8, text=val), torch.device("cpu"), progress=False)[0]}
    assert variants == {"xpos", "xpos+bca"}
    learned = build_model(cfg, "learned", {}, 8, max_position=32)  # trained on positions sampled from [0, 32)
    records = evaluate_model(learned, ResolvedEval(ev, 8, text=val), torch.device("cpu"), progress=False)[0]
    by = {(r["variant"], r["length"]): r for r in records}
    assert by["learned+randpos", 16]["ppl"] is not None and by["learned+randpos", 64]["ppl"] is None
    assert by["learned", 16]["ppl"] is not None and by["learned+randpos", 16]["ppl"] != by["learned", 16]["ppl"]


def test_blockwise_causal_attention_applies_to_the_encodings_asked_for_with_blocks_of_half_train_len():
    from posbench.core.errors import PosbenchError
    from posbench.encodings import ModelShape, build_encoding
    from posbench.evaluation.variants import make_variant
    from posbench.evaluation.variants.window import EVERY, BlockwiseCausal

    bca = make_variant("bca", {"encodings": ["xpos"]})
    shape = ModelShape(32, 4, 1, 16)
    assert isinstance(bca, BlockwiseCausal) and bca.window and bca.record() == {"variant": "bca"}
    assert bca.applies_to(build_encoding("xpos", shape)) and not bca.applies_to(build_encoding("alibi", shape))
    assert make_variant("bca", {"encodings": [EVERY]}).applies_to(build_encoding("alibi", shape))
    assert bca.options(AttentionOptions(), 64, 16).block == 8
    with pytest.raises(PosbenchError, match="unknown encoding in eval.bca: 'xpso'"):
        make_variant("bca", {"encodings": ["xpso"]})
