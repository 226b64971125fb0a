"""posbench/model/kernel_choice.py: each encoding's layers get the kernel the precedence says (own
attention, extender, flex window, explicit scores, blockwise, flex distance, biased, SDPA); an
extender on an encoding it cannot serve is refused, where the old forward dropped it silently; a
flex kernel that cannot compile falls back to its portable step with the same logits."""

import pytest
import torch

from posbench.attention import kernels
from posbench.attention.kernels import Window
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.evaluation.diagnostics import AttentionRecorder
from posbench.evaluation.variants import make_variant
from posbench.model.kernel_choice import PORTABLE, Kernel, choose_kernel, has_content_term, layer_window
from posbench.model.transformer import ModelConfig, build_model

CFG = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=2, mlp_ratio=2)
CPU, CUDA = torch.device("cpu"), torch.device("cuda")  # only the device's type is read
EXTENDER = make_variant("rerope").options(AttentionOptions(), 64, 16)


def kernels_of(name, options=AttentionOptions(), flex=False, device=CPU):
    enc = build_model(CFG, name, {}, 16).encoding
    return [choose_kernel(enc.at(i), i, options, flex, device) for i in range(CFG.n_layers)]


@pytest.mark.parametrize("name, options, flex, device, expected", [
    ("shaw", AttentionOptions(block=4, window=Window("sliding", 4)), True, CUDA, [Kernel.OWN] * 2),
    ("stickbreaking", AttentionOptions(), False, CPU, [Kernel.OWN] * 2),
    ("rope", EXTENDER, True, CUDA, [Kernel.EXTENDER] * 2),
    ("sink", EXTENDER, False, CPU, [Kernel.EXTENDER] * 2),  # the extenders' kernel takes the sink logit
    ("ssmax", EXTENDER, False, CPU, [Kernel.EXTENDER] * 2),  # ... and SSMax's temperature
    ("rope", AttentionOptions(), True, CUDA, [Kernel.SDPA] * 2),
    ("rope", AttentionOptions(block=4), False, CPU, [Kernel.BLOCKWISE] * 2),
    ("alibi", AttentionOptions(), False, CPU, [Kernel.BIASED] * 2),
    ("alibi", AttentionOptions(), True, CPU, [Kernel.FLEX_DISTANCE] * 2),
    ("fire", AttentionOptions(), True, CUDA, [Kernel.BIASED] * 2),  # a bias not by distance: no table
    ("alibi", AttentionOptions(block=4), False, CPU, [Kernel.BLOCKWISE] * 2),
    # a window beats a block: explicit scores, which apply the block too
    ("alibi", AttentionOptions(block=4, window=Window("sliding", 4)), False, CPU, [Kernel.SCORES] * 2),
    ("alibi", AttentionOptions(window=Window("sliding", 4)), True, CUDA, [Kernel.FLEX_SCORES] * 2),
    ("alibi", AttentionOptions(window=Window("sliding", 4)), True, CPU, [Kernel.SCORES] * 2),  # CPU: flex only if asked
    ("alibi", AttentionOptions(window=Window("sliding", 4), kernel="flex"), True, CPU, [Kernel.FLEX_SCORES] * 2),
    ("fire", AttentionOptions(window=Window("sliding", 4)), True, CUDA, [Kernel.SCORES] * 2),
    ("rnope_swa", AttentionOptions(), True, CUDA, [Kernel.FLEX_SCORES, Kernel.SDPA]),  # the layer's own window
    ("rnope_swa", AttentionOptions(), False, CPU, [Kernel.SCORES, Kernel.SDPA]),
    # the diagnostics read the weights of the explicit-score kernel: the flex window has none to give
    ("rnope_swa", AttentionOptions(recorder=AttentionRecorder(2, 2)), True, CUDA, [Kernel.SCORES, Kernel.SDPA]),
    ("sink", AttentionOptions(window=Window("sliding", 4)), True, CUDA, [Kernel.SCORES] * 2),
    ("fox", AttentionOptions(), True, CUDA, [Kernel.SCORES] * 2),  # CUDA trains through the explicit kernel
    ("fox", AttentionOptions(), True, CPU, [Kernel.FLEX_SCORES] * 2),  # CPU: flex is evaluation only
    ("fox", AttentionOptions(), False, CPU, [Kernel.SCORES] * 2),
    ("sink", AttentionOptions(), True, CPU, [Kernel.FLEX_SCORES] * 2),
    ("sink", AttentionOptions(window=Window("sliding", 4)), True, CPU, [Kernel.FLEX_SCORES] * 2),
    ("sink", AttentionOptions(recorder=AttentionRecorder(2, 2)), True, CPU, [Kernel.SCORES] * 2),
    ("cope", AttentionOptions(), True, CPU, [Kernel.SCORES] * 2),  # a content term that is no Decay
    ("path_fox", AttentionOptions(), True, CPU, [Kernel.SCORES] * 2),
    ("cope", AttentionOptions(block=4), False, CPU, [Kernel.SCORES] * 2),
])
def test_each_layer_gets_the_kernel_of_the_first_rule_that_holds(name, options, flex, device, expected):
    assert kernels_of(name, options, flex, device) == expected


@pytest.mark.parametrize("options, device, expected", [
    (AttentionOptions(), CPU, Kernel.BAND),
    (AttentionOptions(), CUDA, Kernel.SCORES),  # the band merges through the CPU flash kernel's log-sum-exp
    (AttentionOptions(window=Window("sliding", 4)), CPU, Kernel.SCORES),  # the band form has no window,
    (AttentionOptions(block=4), CPU, Kernel.SCORES),  # no block
    (AttentionOptions(recorder=AttentionRecorder(2, 2)), CPU, Kernel.SCORES),  # and gives no weights
])
def test_cope_evaluates_through_its_band_where_nothing_else_shapes_the_scores(options, device, expected, monkeypatch):
    """CoPE's band (content_has_band) in evaluation on CPU; training keeps the explicit kernel."""
    monkeypatch.setattr("posbench.model.kernel_choice.CPU_FLASH_LSE", True)
    with torch.no_grad():
        assert kernels_of("cope", options, True, device) == [expected] * 2
        assert kernels_of("fox", options, False, device)[0] is not Kernel.BAND  # a content term without a band form
    assert kernels_of("cope", options, True, device) == [Kernel.SCORES] * 2


def test_a_layers_own_window_comes_before_the_options_window():
    enc = build_model(CFG, "rnope_swa", {}, 16).encoding
    evaluation = Window("sliding", 3)
    assert layer_window(enc.at(0), 0, AttentionOptions(window=evaluation)) == enc.at(0).window(0) != evaluation
    assert layer_window(enc.at(1), 1, AttentionOptions(window=evaluation)) == evaluation
    assert [has_content_term(build_model(CFG, n, {}, 16).encoding) for n in ("fox", "path", "rope", "sink")] == \
        [True, True, False, False]


@pytest.mark.parametrize("name, what", [
    ("shaw", "computes its own attention"), ("alibi", "which has no rotation"), ("tape", "a positional state carried"),
    ("rope_swa", "which has a window"), ("stickbreaking", "computes its own attention"),
])
def test_an_extender_on_an_encoding_it_cannot_serve_is_refused(name, what):
    """The old forward ran the plain path (alibi) or the encoding's own attention (shaw) and dropped the
    extender without a word."""
    with pytest.raises(PosbenchError, match=what):
        kernels_of(name, EXTENDER)


@pytest.mark.parametrize("name, options", [("alibi", AttentionOptions()), ("rope_swa", AttentionOptions(kernel="flex"))])
def test_a_flex_kernel_that_cannot_compile_runs_its_portable_step(name, options, monkeypatch):
    model = build_model(CFG, name, {}, 16).eval()
    x = torch.randint(0, 256, (1, 24), generator=torch.Generator().manual_seed(0))
    monkeypatch.setattr(kernels, "FLEX_MIN_LEN_CPU", 1)  # flex "would run" at this length on CPU
    monkeypatch.setattr(kernels, "_compiled_flex", lambda: (_ for _ in ()).throw(RuntimeError("no compiler")))
    monkeypatch.setitem(kernels._flex_state, "broken", None)
    flex_kernel = kernels_of(name, options, True, CPU)[0]
    assert flex_kernel in PORTABLE
    with torch.no_grad():
        got = model(x, None, options)
        assert kernels._flex_state["broken"] is not None  # it tried, and failed
        torch.testing.assert_close(got, model(x, None, options.replace(kernel="chunked")), rtol=0, atol=0)


@pytest.mark.slow
@pytest.mark.parametrize("name, options", [("fox", AttentionOptions(kernel="flex")), ("sink", AttentionOptions(kernel="flex")),
                                           ("sink", AttentionOptions(kernel="flex", window=Window("chunked", 32)))])
def test_fox_and_sinks_evaluate_through_flex_to_float_tolerance(name, options, monkeypatch):
    """FoX's forget term and a sink logit through compiled flex attention on CPU
    (evaluation) agree with the explicit kernel to 1e-5 (float32), and flex did run."""
    if not kernels.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    torch.manual_seed(0)
    model = build_model(CFG, name, {}, 16).eval()
    with torch.no_grad():  # the sink and gates off their initial values
        for p in model.encoding.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    calls = []
    compiled = kernels._compiled_flex
    monkeypatch.setattr(kernels, "_compiled_flex", lambda: calls.append(1) or compiled())
    x = torch.randint(0, 256, (2, 200), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        explicit = model(x, None, options.replace(kernel="chunked"))
        assert not calls
        flex = model(x, None, options)
    assert len(calls) == CFG.n_layers and kernels._flex_state["broken"] is None
    torch.testing.assert_close(flex, explicit, rtol=1e-5, atol=1e-5)
