"""The CUDA paths: they skip without a GPU and run on one (scripts/gpu_check.sh runs them there).

What only a GPU exercises: flex attention with its backward in training, bf16 autocast, TF32, and
the job -> GPU mapping of a parallel sweep."""

import numpy as np
import pytest
import torch

from posbench.attention import kernels as attention
from posbench.attention.options import AttentionOptions
from posbench.core.device import autocast, resolve_device
from posbench.model.transformer import ModelConfig, build_model
from posbench.training.trainer import TrainConfig, train_model

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
SMALL = ModelConfig(name="t", d_model=64, n_layers=2, n_heads=4, mlp_ratio=2)


def test_auto_device_is_cuda_with_tf32_and_jobs_spread_over_gpus():
    n = torch.cuda.device_count()
    for job in range(2 * n):
        assert resolve_device("auto", job) == torch.device(f"cuda:{job % n}")
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32


@pytest.mark.parametrize("encoding", ["alibi", "kerple_log", "t5", "irope", "rnope_swa"])  # + window block masks
def test_flex_training_step_matches_the_chunked_path_forward_and_backward(encoding):
    """On CUDA, training uses flex attention (with its backward): same loss and gradients as the
    chunked float-mask path, in fp32."""
    device = torch.device("cuda")
    assert attention.use_flex(device, 128, training=True)
    torch.manual_seed(0)
    model = build_model(SMALL, encoding, {}, 64, 64).to(device)
    x = torch.randint(0, 256, (4, 128), device=device)
    grads, losses = {}, {}
    for path in ("chunked", "flex"):
        model.zero_grad(set_to_none=True)
        logits = model(x, None, AttentionOptions(kernel=path))
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1)[:-1], x.flatten()[1:])
        loss.backward()
        losses[path] = loss.item()
        grads[path] = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    assert attention._flex_state["broken"] is None, attention._flex_state["broken"]
    assert losses["flex"] == pytest.approx(losses["chunked"], rel=1e-4)
    for name, g in grads["chunked"].items():
        torch.testing.assert_close(grads["flex"][name], g, atol=2e-4, rtol=2e-3, msg=name)


@pytest.mark.parametrize("encoding", ["nope", "rope", "alibi", "shaw", "fire", "fox", "cope", "sink", "ssmax", "gated",
                                      "stickbreaking"])
def test_bf16_training_learns_and_stays_finite(encoding):
    device = resolve_device("cuda")
    torch.manual_seed(0)
    model = build_model(SMALL, encoding, {}, 64, 64).to(device)
    tokens = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 2000, dtype=np.uint8)
    tc = TrainConfig(steps=60, batch_size=16, warmup_steps=5, log_every=10, val_every=60, val_batches=2)
    result = train_model(model, tokens, tokens[:5000], tc, 64, 0, device)
    assert result["status"] == "completed"
    assert result["final_val_loss"] < 2.0  # a repeated sentence is learned fast from ln(256) = 5.5
    with torch.no_grad(), autocast(device):
        assert model(torch.randint(0, 256, (2, 64), device=device)).dtype == torch.bfloat16
