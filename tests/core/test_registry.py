"""posbench/core/registry.py: names -> plug-ins of one kind: built-ins registered once, others loaded from
``module:attr`` paths (or entry points) and checked, unknown names one line with the valid ones."""

import pytest

from posbench.core.errors import PosbenchError
from posbench.core.registry import Registry, is_path, load_path, subclass_check


class Loaded(dict):
    """A widget from outside the registry, loaded by its path."""


def not_a_widget():
    pass


def make_registry() -> Registry:
    reg = Registry("widget", "posbench.test_widgets", check=subclass_check(dict))

    @reg.register("plain")
    class Plain(dict):
        pass

    @reg.register("ordered")
    class Ordered(dict):
        pass

    return reg


def test_built_ins_are_found_by_name_and_named_by_it():
    reg = make_registry()
    assert reg.builtins() == ["ordered", "plain"] and reg.names() == ["ordered", "plain"]
    assert reg.get("plain").name == "plain" and "plain" in reg and "other" not in reg
    assert reg.find("other") is None
    with pytest.raises(RuntimeError, match="widget 'plain' registered twice"):
        reg.register("plain")(dict)



def test_a_topic_package_s_own_module_holds_built_ins_beside_the_built_in_package(tmp_path, monkeypatch):
    """With ``topic_module``, the built-ins are the modules of the built-in package and that module of each
    package beside it (a report topic's section.py): a new topic is one folder, listed nowhere; a package
    without that module, and its other modules, are not imported."""
    import sys

    root = tmp_path / "wing"
    files = {"__init__.py": "", "registry.py": "from posbench.core.registry import Registry\n"
             "REG = Registry('part', 'posbench.test_parts', 'wing.parts', topic_module='section')\n",
             "parts/__init__.py": "", "parts/plain.py": "from wing.registry import REG\nREG.register('plain')(type('Plain', (), {}))\n",
             "topic/__init__.py": "", "topic/section.py": "from wing.registry import REG\nTOPICAL = REG.register('topical')(type('Topical', (), {}))\n",
             "topic/frames.py": "raise RuntimeError('not a section: never imported')\n",
             "shared/__init__.py": "", "shared/tables.py": "raise RuntimeError('no section here: never imported')\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "wing" or m.startswith("wing.")]:
        monkeypatch.delitem(sys.modules, name)
    from wing.registry import REG  # noqa: E402 - the planted package above

    assert REG.builtin_modules() == ["wing.parts.plain", "wing.topic.section"]
    assert REG.builtins() == ["plain", "topical"] and REG.get("topical").__module__ == "wing.topic.section"
    assert "wing.topic.frames" not in sys.modules and "wing.shared.tables" not in sys.modules

def test_an_unknown_name_is_one_line_with_the_valid_ones():
    with pytest.raises(PosbenchError) as e:
        make_registry().get("fancy")
    assert str(e.value) == ("unknown widget 'fancy'; valid: ordered, plain (or a plug-in: module:attr, or an entry "
                            "point in group posbench.test_widgets)")


def test_an_import_path_loads_and_is_checked():
    reg = make_registry()
    path = f"{__name__}:Loaded"
    assert is_path(path) and not is_path("plain")
    assert reg.get(path) is Loaded and Loaded.name == path and path in reg.names()  # a loaded path is a name too
    with pytest.raises(PosbenchError, match=r"is not a builtins.dict subclass"):
        reg.get(f"{__name__}:not_a_widget")


@pytest.mark.parametrize("path, message", [
    ("plain", "'plain' is not an import path; write module:attr"),
    ("no_such_module_here:Thing", "cannot import 'no_such_module_here' for 'no_such_module_here:Thing'"),
    ("json:nothing", "module 'json' has no 'nothing' (from 'json:nothing')"),
])
def test_a_bad_import_path_says_what_is_missing(path, message):
    with pytest.raises(PosbenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_path(path)
    assert load_path("json.dumps") is load_path("json:dumps")  # module.attr works too
