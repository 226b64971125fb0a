"""``load_corpus``: a corpus's byte caches (posbench/data/corpus.py) and, with a subword
``data.tokenizer``, its token caches (posbench/data/tokens.py)."""

from __future__ import annotations

import logging

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.data.corpus import Corpus, documents, load_byte_corpus, remove_cache
from posbench.data.tokens import tokenized_corpus


log = logging.getLogger("posbench")

FEW_DOCUMENTS = 5  # below this, the report's intervals over text are wide or (one document) absent


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


def validation_documents(val: np.ndarray, separator: str) -> int:
    """The number of non-empty documents in the validation bytes, as the evaluator splits them (data.corpus.documents)."""
    return len(documents(val, separator.encode())[0]) if len(val) else 0


def load_training_corpus(cfg) -> Corpus:
    """``load_corpus`` for a run about to train: it also says where the validation split is too small
    for the report's intervals (warn_few_documents)."""
    corpus = load_corpus(cfg)
    warn_few_documents(corpus.val_bytes, cfg.doc_separator, cfg.val_fraction)
    return corpus


def warn_few_documents(val: np.ndarray, separator: str, val_fraction: float) -> int:
    """Warn, every time a run starts training, where its validation split holds fewer than FEW_DOCUMENTS
    documents: the report resamples documents for its intervals over text (a small own corpus
    got one validation document without a word)."""
    n = validation_documents(val, separator)
    if n < FEW_DOCUMENTS:
        log.warning("the validation split holds %d document(s): the report's intervals over text will be %s; add "
                    "documents or raise data.val_fraction (now %g)", n, "absent" if n < 2 else "wide", val_fraction)
    return n
