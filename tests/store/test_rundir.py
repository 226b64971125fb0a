"""posbench/store/rundir.py: a checkpoint that is truncated or not posbench's is refused without
unpickling it."""

import pytest

from posbench.core.errors import PosbenchError


def test_truncated_or_foreign_checkpoints_are_refused_without_unpickling(tmp_path):
    import collections

    import torch

    from posbench.store.rundir import load_checkpoint

    (tmp_path / "checkpoint.pt").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(PosbenchError, match="truncated or not a posbench checkpoint"):
        load_checkpoint(tmp_path)
    with pytest.raises(PosbenchError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "checkpoint.pt")
    with pytest.raises(PosbenchError, match="not a posbench checkpoint"):
        load_checkpoint(tmp_path)
    torch.save(collections.Counter(a=1), tmp_path / "checkpoint.pt")  # weights_only refuses to build it
    with pytest.raises(PosbenchError, match="not a posbench checkpoint"):
        load_checkpoint(tmp_path)
