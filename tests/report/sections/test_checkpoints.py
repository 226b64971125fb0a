"""The checkpoints section: shown only for runs of posbench-eval-hf, each named with how it was read, and the
public-corpus caveat where the scored text is one of posbench's public corpora."""

from types import SimpleNamespace

from omegaconf import OmegaConf

from posbench.report.drawing.document import Para, Table
from posbench.report.sections.checkpoints import Checkpoints


def ctx_of(*configs):
    return SimpleNamespace(files={f"runs/r{i}": SimpleNamespace(config=OmegaConf.create(c)) for i, c in enumerate(configs)})


def checkpoint_config(corpus, bos_id=1):
    return {"checkpoint": {"name": "m", "model_type": "llama", "dtype": "bfloat16", "bos": "auto", "bos_token_id": bos_id},
            "train_len": 2048, "data": {"name": corpus}, "encoding": {"name": "llama"}, "train": {"lr": 0.0}}


def test_only_checkpoint_runs_bring_the_section():
    assert not Checkpoints().applies(ctx_of({"encoding": {"name": "rope"}, "train": {"lr": 1e-3}}))
    assert Checkpoints().applies(ctx_of(checkpoint_config("stdlib")))


def test_the_caveat_is_said_for_a_public_corpus_and_not_for_the_users_own_text():
    public = Checkpoints().build(ctx_of(checkpoint_config("stdlib")), None)
    own = Checkpoints().build(ctx_of(checkpoint_config("local", bos_id=None)), None)
    said = lambda blocks: any(isinstance(b, Para) and "Caveat" in b.text for b in blocks)  # noqa: E731
    assert said(public) and not said(own)
    table = [b for b in own if isinstance(b, Table)][0]
    assert table.frame.iloc[0]["BOS"] == "none" and table.frame.iloc[0]["context length"] == 2048
