"""posbench/training/parallel.py: a run over two processes (gloo, one thread each) takes the steps of
one process at the same global batch: the same losses and weights to float rounding; only process 0
writes, and its resume state continues the run (on two processes or on one)."""

import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from posbench.core.errors import PosbenchError
from posbench.model.transformer import ModelConfig, build_model
from posbench.store.rundir import RunDir
from posbench.training.data import TrainingData
from posbench.training.hooks import Hooks
from posbench.training.parallel import Processes
from posbench.training.trainer import TrainConfig, train_model

TEXT = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, dtype=np.uint8)
TC = TrainConfig(steps=10, batch_size=4, warmup_steps=2, log_every=1, val_every=5, val_batches=1, checkpoint_every=5)
CPU = torch.device("cpu")


def _train(resume_dir, processes=None):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="tiny", d_model=32, n_layers=2, n_heads=2), "rope", {}, 16)
    result = train_model(model, TrainingData(TEXT, TEXT, 16, 0), TC, CPU, hooks=Hooks(resume_dir=resume_dir and RunDir(resume_dir)),
                         processes=processes)
    return model, result


def _process(rank, world, port, run_dir, out):
    import os

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    processes = Processes(rank, world, rank)
    processes.start(CPU)
    try:
        model, result = _train(run_dir, processes)
        torch.save({"model": model.state_dict(), "history": result["history"]}, out / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def _two_processes(run_dir, out):
    with socket.socket() as s:  # a free port for the process group
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out.mkdir(exist_ok=True)
    mp.spawn(_process, args=(2, port, run_dir, out), nprocs=2, join=True)
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in (0, 1)]


def _same(history_a, history_b):
    for a, b in zip(history_a, history_b, strict=True):
        assert a["step"] == b["step"]
        for key in ("loss", "grad_norm", "val_loss"):
            if key in a or key in b:
                assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), (a["step"], key)


@pytest.mark.slow  # two process starts of torch and 30 steps: 85 to 90 s on 2 cores shared with other work (load ~9)
def test_two_processes_take_the_steps_of_one_at_the_same_global_batch_and_resume(tmp_path):
    one, alone = _train(None)
    ranks = _two_processes(tmp_path / "run", tmp_path / "out")
    for r in ranks:  # both processes hold the model of one process
        _same(alone["history"], r["history"])
        assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(one.state_dict().values(), r["model"].values()))
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["resume.pt"]  # written by process 0 alone
    assert torch.load(tmp_path / "run" / "resume.pt", weights_only=False)["next_step"] == 5
    # the resume state at step 5 continues the run: on two processes exactly, on one to float rounding
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "resume.pt").write_bytes((tmp_path / "run" / "resume.pt").read_bytes())
    again = _two_processes(tmp_path / "run", tmp_path / "again")
    untimed = lambda h: [{k: v for k, v in e.items() if k != "tokens_per_s"} for e in h]  # noqa: E731
    assert untimed(again[0]["history"]) == untimed(ranks[0]["history"])
    _same(alone["history"], _train(tmp_path / "one")[1]["history"])


def test_a_batch_that_does_not_divide_among_the_processes_is_refused():
    with pytest.raises(PosbenchError, match="train.batch_size=6 does not divide among 4 processes"):
        Processes(0, 4, 0).check(6)
