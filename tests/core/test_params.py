"""posbench/core/params.py: a plug-in's yaml parameters typed and checked against its ``Params``
dataclass, in one line naming the key and what is valid."""

from dataclasses import dataclass

import pytest

from posbench.core.errors import PosbenchError
from posbench.core.params import above, at_least, make_typed, param, positive


@dataclass
class Params:  # each field declares its rule (posbench.core.params); a field without one is checked for its type only
    base: float = param(10000.0, above(1))
    width: int = param(4, positive)
    init_std: float = param(0.02, at_least(0))  # 0 is meaningful here
    gated: bool = False


def test_values_are_converted_to_the_fields_types_and_defaults_fill_the_rest():
    typed = make_typed("encoding", "mine", Params, {"width": "8", "init_std": 0})
    assert typed == Params(base=10000.0, width=8, init_std=0.0, gated=False) and isinstance(typed.width, int)


@pytest.mark.parametrize("params, message", [
    ({"widht": 3}, "encoding 'mine' has no parameter 'widht'; valid: base, gated, init_std, width"),
    ({"width": "many"}, "encoding.width must be an integer, got 'many'"),
    ({"base": "high"}, "encoding.base must be a number, got 'high'"),
    ({"width": 0}, "encoding.width of 'mine' must be positive (and finite), got 0"),
    ({"init_std": -0.1}, "encoding.init_std of 'mine' must be at least 0 (and finite), got -0.1"),
    ({"base": 1.0}, "encoding.base of 'mine' must be above 1 (and finite), got 1"),
    ({"base": float("inf")}, "encoding.base of 'mine' must be above 1 (and finite), got inf"),
])
def test_a_bad_parameter_is_one_line_naming_it(params, message):
    with pytest.raises(PosbenchError) as e:
        make_typed("encoding", "mine", Params, params)
    assert str(e.value) == message


def test_a_plugin_s_own_check_runs_last():
    @dataclass
    class Checked:
        mode: str = "a"

        def check(self):
            if self.mode not in ("a", "b"):
                raise PosbenchError(f"task.mode={self.mode!r}; valid: a, b")

    assert make_typed("task", "mine", Checked, {"mode": "b"}).mode == "b"
    with pytest.raises(PosbenchError, match="task.mode='c'; valid: a, b"):
        make_typed("task", "mine", Checked, {"mode": "c"})
