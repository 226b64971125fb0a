"""posbench/training/state.py: a resume state restores where the loop stood; one that does not fit
the model leaves the model as it was and is discarded."""

import torch

from posbench.model.transformer import ModelConfig, build_model
from posbench.store.rundir import RunDir
from posbench.training.state import LoopState
from posbench.training.trainer import TrainConfig, _optimiser


def _model(d_model=32):
    torch.manual_seed(0)
    return build_model(ModelConfig(name="tiny", d_model=d_model, n_layers=1, n_heads=2), "rope", {}, 16)


def test_a_saved_state_restores_the_step_history_probes_losses_and_weights(tmp_path):
    tc = TrainConfig(steps=10)
    model = _model()
    opt, sched = _optimiser(model, tc, 1.0)
    st = LoopState()
    st.history, st.probes, st.last_loss, st.val_loss = [{"step": 4, "loss": 2.5}], [{"step": 4, "probe": 1.0}], 2.5, 2.7
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    for _ in range(4):  # the schedule's step must be the state's next step
        opt.step()
        sched.step()
    RunDir(tmp_path).save_resume(st.saved(model, opt, sched, next_step=4))
    again = _model()
    back = LoopState()
    assert back.restore(RunDir(tmp_path), again, *_optimiser(again, tc, 1.0), steps=10)
    assert (back.start, back.history, back.probes, back.last_loss, back.val_loss) == (4, st.history, st.probes, 2.5, 2.7)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))


def test_a_state_of_another_model_leaves_the_model_as_it_was_and_is_discarded(tmp_path):
    tc = TrainConfig(steps=10)
    other = _model(d_model=64)
    RunDir(tmp_path).save_resume(LoopState().saved(other, *_optimiser(other, tc, 1.0), next_step=0))
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    st = LoopState()
    assert not st.restore(RunDir(tmp_path), model, *_optimiser(model, tc, 1.0), steps=10)
    assert st.start == 0 and not (tmp_path / "resume.pt").exists()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
