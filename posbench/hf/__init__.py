"""Hugging Face causal LMs in posbench: a local checkpoint scored as a posbench row
(``posbench-eval-hf``: posbench/hf/checkpoint.py loads it, posbench/hf/score.py scores it with posbench's
protocols, posbench/hf/row.py writes its run directory) and posbench's own RoPE/NoPE runs exported to
transformers' format (``posbench-export``: posbench/hf/export.py). Reference: docs/checkpoints.md.

transformers is optional (the ``hf`` extra): this package imports it only inside its functions, so
``import posbench`` and every other command work without it; a command of this package without it
is refused in one line (``require_transformers``)."""

from __future__ import annotations

from posbench.core.errors import PosbenchError


def require_transformers():
    """The transformers module, or one line saying how to install it."""
    try:
        import transformers
    except ImportError:
        raise PosbenchError("this command needs Hugging Face transformers: pip install 'posbench[hf]'") from None
    return transformers
