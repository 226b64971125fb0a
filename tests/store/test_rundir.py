"""posbench/store/rundir.py: a checkpoint that is truncated or not posbench's is refused without
unpickling it."""

import pytest

from posbench.core.errors import PosbenchError


def test_truncated_or_foreign_checkpoints_are_refused_without_unpickling(tmp_path):
    import collections

    import torch

    from posbench.store.rundir import RunDir

    (tmp_path / "checkpoint.pt").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(PosbenchError, match="truncated or not a posbench checkpoint"):
        RunDir(tmp_path).load_checkpoint()
    with pytest.raises(PosbenchError, match="no checkpoint"):
        RunDir(tmp_path / "missing").load_checkpoint()
    torch.save({"weights": torch.zeros(2)}, tmp_path / "checkpoint.pt")
    with pytest.raises(PosbenchError, match="not a posbench checkpoint"):
        RunDir(tmp_path).load_checkpoint()
    torch.save(collections.Counter(a=1), tmp_path / "checkpoint.pt")  # weights_only refuses to build it
    with pytest.raises(PosbenchError, match="not a posbench checkpoint"):
        RunDir(tmp_path).load_checkpoint()


def test_token_losses_merge_into_their_own_file_and_leave_per_position_alone(tmp_path, caplog):
    import numpy as np

    from posbench.store.rundir import PER_POSITION, TOKEN_LOSSES, RunDir, token_loss_keys

    assert RunDir(tmp_path).read_token_losses() is None
    loss, doc, pos = token_loss_keys("rope", "nonoverlapping", 32)
    assert (loss, doc, pos) == ("rope/nonoverlapping/L32", "nonoverlapping/L32/doc", "nonoverlapping/L32/position")
    RunDir(tmp_path).write_token_losses({loss: np.array([1.5, 2.0], dtype=np.float16), doc: np.array([0, 1], dtype=np.int32)})
    control = token_loss_keys("rope+swaL", "nonoverlapping", 32)[0]
    RunDir(tmp_path).write_token_losses({control: np.array([1.5, 3.0], dtype=np.float16)})
    got = RunDir(tmp_path).read_token_losses()
    assert set(got) == {loss, doc, control} and got[loss].dtype == np.float16 and got[control].tolist() == [1.5, 3.0]
    assert not (tmp_path / PER_POSITION).exists() and RunDir(tmp_path).read_per_position() is None
    (tmp_path / TOKEN_LOSSES).write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=TOKEN_LOSSES):
        RunDir(tmp_path).read_token_losses()
    RunDir(tmp_path).write_token_losses({loss: np.array([1.0], dtype=np.float16)})  # an unreadable old file is replaced
    assert list(RunDir(tmp_path).read_token_losses()) == [loss]


def test_the_recorded_run_id_is_read_from_a_metrics_file_that_fails_the_other_checks(tmp_path):
    """posbench-export names its source run by the id metrics.json records, even where the file holds
    little else; a folder without one is named by its folder."""
    from posbench.store.rundir import METRICS, RunDir

    folder = RunDir(tmp_path / "rope_x")
    assert folder.recorded_run_id() == "rope_x" and folder.read_metrics() is None
    folder.path.mkdir()
    (folder.path / METRICS).write_text('{"run_id": "rope_tiny_test", "status": "completed"}')
    assert folder.recorded_run_id() == "rope_tiny_test" and folder.read_metrics(warn=False) is None
