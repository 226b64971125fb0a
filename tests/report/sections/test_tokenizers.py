"""The tokenizers section (posbench/report/sections/tokenizers.py): runs of several tokenizers compared in
bits per byte, the one measure that compares across them."""

from types import SimpleNamespace

from posbench.report.sections.tokenizers import Tokenizers, tokenizer_of
from tests.helpers import run_section


def test_models_named_model_slash_tokenizer_are_compared_in_bits_per_byte(sweep_context, tmp_path):
    assert (tokenizer_of("small/bpe1024"), tokenizer_of("small")) == ("bpe1024", "byte")
    assert not Tokenizers().applies(sweep_context)  # bytes only
    evals = sweep_context.evals.assign(length_bytes=sweep_context.evals["length"].astype(float), bytes_scored=512)
    bpe = evals.assign(model="tiny/bpe300", length_bytes=evals["length"] * 3.5)
    ctx = SimpleNamespace(has_lm=True, evals=__import__("pandas").concat([evals, bpe]))
    assert Tokenizers().applies(ctx)
    md, written = run_section(Tokenizers, ctx, tmp_path)
    assert md.startswith("## Tokenizers (bits per byte)") and written == {}
    assert "| bpe300 " in md and "| byte " in md and "16 tokens ~ 56 bytes" in md
