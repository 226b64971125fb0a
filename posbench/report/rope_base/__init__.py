"""Theory-side predictions of where a RoPE model's length extrapolation breaks, as a function of its base."""
