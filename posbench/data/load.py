"""``load_corpus``: a corpus's byte caches (posbench/data/corpus.py) and, with a subword
``data.tokenizer``, its token caches (posbench/data/tokens.py)."""

from __future__ import annotations

from posbench.core.errors import PosbenchError
from posbench.data.corpus import Corpus, load_byte_corpus, remove_cache
from posbench.data.tokens import tokenized_corpus


def load_corpus(cfg) -> Corpus:
    """Load (building once, then from the cache) the tokens of the configured corpus: its bytes,
    then, with a subword ``data.tokenizer``, their tokens (posbench/data/tokens.py)."""
    corpus = load_byte_corpus(cfg)
    if cfg.tokenizer.is_bytes:
        return corpus
    try:
        return tokenized_corpus(corpus, cfg)
    except PosbenchError:
        remove_cache(corpus)  # a refused tokenizer leaves no byte cache it made behind either
        raise
