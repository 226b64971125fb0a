"""Names of evaluation-only variants: the same weights, scored another way, each its own report
row. A light module (no torch), shared by the encodings, the evaluator and the report."""

BCA_SUFFIX = "+bca"  # blockwise causal attention (the xPos paper's inference setting)
RANDPOS_SUFFIX = "+randpos"  # sampled positions, as trained with train.random_positions


def base_variant(variant: str) -> str:
    """The encoding's own variant name without an evaluation-only suffix."""
    return variant.removesuffix(BCA_SUFFIX).removesuffix(RANDPOS_SUFFIX)
