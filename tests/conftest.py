"""Shared fixtures. Tests never touch the network or a wandb account, and use their own cache."""

import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ["WANDB_MODE"] = "disabled"


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("posbench-cache")
    os.environ["POSBENCH_CACHE"] = str(path)
    return path


def write_text_corpus(root: Path, n_docs: int = 40, words_per_doc: int = 400, seed: int = 0) -> Path:
    """A small corpus with learnable structure: documents of repeated, numbered 'sentences'."""
    rng = random.Random(seed)
    vocab = ["alpha", "beta", "gamma", "delta", "posit", "token", "window", "length", "bias", "rotate"]
    root.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        words = []
        for i in range(words_per_doc):
            words.append(rng.choice(vocab))
            if i % 8 == 7:
                words.append(f"{i // 8}.\n")
        (root / f"doc{d:03d}.txt").write_text(" ".join(words))
    return root


@pytest.fixture(scope="session")
def text_corpus(tmp_path_factory) -> Path:
    return write_text_corpus(tmp_path_factory.mktemp("corpus") / "docs")


@pytest.fixture
def compose(cache_dir):
    """Compose the real Hydra config with overrides, as the command line would."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from posbench.config import CONF_DIR, register_configs

    register_configs()

    def _compose(*overrides: str, config_name: str = "config"):
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            return hydra_compose(config_name=config_name, overrides=list(overrides))

    return _compose
