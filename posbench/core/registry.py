"""One registry per plug-in kind: encodings, tasks, evaluation variants, RoPE scalings, evaluation
protocols, report sections. Each finds a name in three places, in this order:

1. **built-ins**: classes in posbench that register themselves with ``@REGISTRY.register("name")``
   (the modules of a built-in package are imported on first use, so adding one is one file; where
   the registry names a ``topic_module``, that module of each package beside the built-in package
   too: report sections live in posbench/report/sections/ or in a topic's own package, as
   posbench/report/<topic>/section.py, so that a topic is one folder);
2. **installed plug-ins**: an entry point in the kind's group of another installed package, e.g. in
   its ``pyproject.toml``::

       [project.entry-points."posbench.encodings"]
       myenc = "mypkg.encodings:MyEncoding"

   loaded only when its name is asked for (importing posbench imports no user code);
3. **a path**: a ``module:attr`` (or dotted ``module.attr``) string given as the name, or as
   ``_target_`` beside it in a config (``encoding.name=myenc encoding._target_=mypkg.enc:MyEnc``).

Built-ins win a name clash: an entry point that reuses a built-in's name is never loaded for it
(a warning names both when the name is used), and a ``_target_`` beside a built-in's name is
ignored with a warning, so an installed package can never change what a built-in name measures.

A plug-in's code that raises while it is loaded, built or checked (``plugin_code``) is one line
naming the plug-in, its file and its error (exit 2, nothing written), not a traceback; posbench's
own code keeps its traceback: an exception there is a bug of posbench, not the user's doing.

This follows lm-evaluation-harness's registry (decorators, entry points, lazy loading).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import pkgutil
import sys
import threading
import traceback
from importlib import metadata
from typing import Any, Callable, Generic, Iterator, TypeVar

from posbench.core.errors import PosbenchError

log = logging.getLogger("posbench")
T = TypeVar("T")


def split_path(path: str) -> tuple[str, str]:
    """(module, attr) of ``module:attr`` or ``module.attr`` (either may be empty when it is not a path)."""
    module, sep, attr = path.partition(":")
    if not sep:
        module, _, attr = path.rpartition(".")
    return module, attr


def load_path(path: str) -> Any:
    """The object at ``module:attr`` or ``module.attr``; PosbenchError naming what is missing. A module
    that is there but raises while it is imported (also an ImportError of something it imports)
    raises that error, for ``plugin_code`` to name in one line."""
    module, attr = split_path(path)
    if not module or not attr:
        raise PosbenchError(f"{path!r} is not an import path; write module:attr, e.g. mypkg.encodings:MyEncoding")
    try:
        obj = importlib.import_module(module)
    except ImportError as e:
        if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
            raise  # the module exists and something it imports does not: the plug-in's own error
        raise PosbenchError(f"cannot import {module!r} for {path!r} ({e}); is its package installed?") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PosbenchError(f"module {module!r} has no {attr!r} (from {path!r})")
        obj = getattr(obj, part)
    return obj


def is_path(name: str) -> bool:
    return ":" in name


def is_posbench_module(module: str | None) -> bool:
    """Whether code in ``module`` is posbench's own (a built-in) rather than a plug-in's."""
    return module is not None and (module == "posbench" or module.startswith("posbench."))


@contextlib.contextmanager
def plugin_code(kind: str, name: str, module: str | None, doing: str) -> Iterator[None]:
    """Runs a plug-in's code (``module``: where it is defined): an exception other than a
    PosbenchError (its own one-line refusal, which passes through) becomes one PosbenchError naming
    the plug-in, the file and line that raised and the error, so that a broken plug-in is one line,
    exit 2, before anything is written. In posbench's own modules nothing is caught: an exception
    there is a bug, and its traceback is what fixes it."""
    if is_posbench_module(module):
        yield
        return
    try:
        yield
    except PosbenchError:
        raise
    except Exception as e:  # noqa: BLE001 - anything a plug-in raises
        lines = str(e).strip().splitlines()
        raise PosbenchError(f"{kind} {name!r} failed while {doing} ({_where(module, e)}): {type(e).__name__}"
                            f"{': ' + lines[0] if lines else ''}") from None


def _where(module: str | None, e: BaseException) -> str:
    """``file:line`` of the plug-in's own code that raised: the deepest frame in its module's file
    (for a syntax error, the error's place), else the module's file."""
    if isinstance(e, SyntaxError) and e.filename:
        return f"{e.filename}:{e.lineno}"
    file = _module_file(module)
    line = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if file is not None and frame.f_code.co_filename == file:
            line = lineno
    return f"{file}:{line}" if line is not None else file or str(module)


def _module_file(module: str | None) -> str | None:
    """The source file of ``module``, also of one whose import just failed (it is not in sys.modules)."""
    if module is None:
        return None
    if (file := getattr(sys.modules.get(module), "__file__", None)) is not None:
        return file
    try:
        spec = importlib.util.find_spec(module)
    except Exception:  # noqa: BLE001 - its package itself does not import: no file to name
        return None
    return spec.origin if spec is not None else None


class Registry(Generic[T]):
    """Names -> plug-ins of one kind. ``builtin_package``: the posbench package whose modules hold
    the built-ins (imported on first lookup); ``topic_module``: a module name that holds built-ins too
    in each package beside ``builtin_package`` that has one (``section``: posbench/report/budget/section.py);
    ``group``: the entry-point group of installed ones; ``check``: called on every plug-in loaded from
    outside posbench (its interface, one line)."""

    def __init__(self, kind: str, group: str, builtin_package: str | None = None,
                 check: Callable[[str, Any], None] | None = None,
                 sort: bool | Callable[[Any], Any] = True, topic_module: str | None = None):
        self.kind, self.group, self.builtin_package, self._check = kind, group, builtin_package, check
        self.topic_module = topic_module
        # True: by name; False: in the order they registered (a sequence of methods in one module); a
        # function: by its value for each built-in (built-ins spread over modules, which load in name order)
        self.sort = sort
        self._builtins: dict[str, T] = {}
        self._external: dict[str, T] = {}
        self._discovered = builtin_package is None
        self._discovering, self._discovery = False, threading.RLock()
        self._shadowing: dict[str, Any] | None = None  # entry points named like a built-in, not yet warned of

    # -- built-ins ----------------------------------------------------------------------------------
    def register(self, name: str) -> Callable[[T], T]:
        """Decorator of a built-in: ``@ENCODINGS.register("rope")``; sets ``obj.name`` for classes."""
        def deco(obj: T) -> T:
            if name in self._builtins:
                raise RuntimeError(f"{self.kind} {name!r} registered twice")
            if isinstance(obj, type):
                obj.name = name
            self._builtins[name] = obj
            return obj
        return deco

    def _discover(self) -> None:
        if self._discovered:
            return
        # another thread waits until the built-ins are imported (it would see none); the importing
        # thread itself may come back here from a module it imports, and goes on
        with self._discovery:
            if self._discovered or self._discovering:
                return
            self._discovering = True
            try:
                for module in self.builtin_modules():
                    importlib.import_module(module)
            finally:
                self._discovering, self._discovered = False, True

    def builtin_modules(self) -> list[str]:
        """The modules that hold the built-ins, in the order they are imported: every module of
        ``builtin_package``, then ``<package>.<topic_module>`` of each package beside it that has one."""
        if self.builtin_package is None:
            return []
        package = importlib.import_module(self.builtin_package)
        modules = [f"{self.builtin_package}.{mod.name}" for mod in pkgutil.iter_modules(package.__path__)
                   if not mod.name.startswith("_")]
        if self.topic_module:
            parent = importlib.import_module(self.builtin_package.rpartition(".")[0])
            for mod in pkgutil.iter_modules(parent.__path__):
                topic = f"{parent.__name__}.{mod.name}"
                inside = [os.path.join(folder, mod.name) for folder in parent.__path__]  # read, not imported
                if mod.ispkg and not mod.name.startswith("_") and topic != self.builtin_package and any(
                        m.name == self.topic_module for m in pkgutil.iter_modules(inside)):
                    modules.append(f"{topic}.{self.topic_module}")
        return modules

    # -- lookups ------------------------------------------------------------------------------------
    def builtins(self) -> list[str]:
        self._discover()
        if callable(self.sort):
            return sorted(self._builtins, key=lambda name: self.sort(self._builtins[name]))
        return sorted(self._builtins) if self.sort else list(self._builtins)

    def is_builtin(self, name: str) -> bool:
        self._discover()
        return name in self._builtins

    def _warn_if_shadowed(self, name: str) -> None:
        """An installed entry point named like built-in ``name`` is never loaded for it (the
        built-in wins): one warning naming both, the first time the name is used."""
        if self._shadowing is None:  # one look at the installed entry points per registry
            self._shadowing = {ep.name: ep for ep in metadata.entry_points(group=self.group) if ep.name in self._builtins}
        ep = self._shadowing.pop(name, None)
        if ep is not None:
            builtin = self._builtins[name]
            where = f"{builtin.__module__}.{builtin.__qualname__}" if isinstance(builtin, type) else "posbench"
            log.warning("the entry point %s = %s in group %s has the name of the built-in %s %r (%s); the built-in "
                        "is used: give the entry point another name to use it", ep.name, ep.value, self.group,
                        self.kind, name, where)

    def entry_point_names(self) -> list[str]:
        """Names of installed plug-ins (without importing them)."""
        return sorted({ep.name for ep in metadata.entry_points(group=self.group)} - set(self.builtins()))

    def names(self) -> list[str]:
        """Every name this kind can take: built-ins, then installed plug-ins, then loaded paths."""
        loaded = sorted({name for name, _ in self._external})
        return self.builtins() + [n for n in dict.fromkeys(self.entry_point_names() + loaded) if n not in self._builtins]

    def __iter__(self):
        return iter(self.names())

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: str) -> bool:
        try:
            self.get(name)
        except PosbenchError:
            return False
        return True

    def get(self, name: str, target: str | None = None) -> T:
        """The plug-in called ``name``; ``target``: its ``module:attr`` (a config's ``_target_``)."""
        self._discover()
        if name in self._builtins:
            self._warn_if_shadowed(name)
            if target is not None:
                log.warning("%s %r is a built-in: ignoring _target_=%s (choose another name for your own)",
                            self.kind, name, target)
            return self._builtins[name]
        if (name, target) in self._external:
            return self._external[name, target]
        path = target or (name if is_path(name) else None)
        if path is None:
            eps = [ep for ep in metadata.entry_points(group=self.group) if ep.name == name]
            if not eps:
                raise PosbenchError(f"unknown {self.kind} {name!r}; valid: {', '.join(self.names())} "
                                    f"(or a plug-in: module:attr, or an entry point in group {self.group})")
            with plugin_code(self.kind, name, eps[0].module, f"loading from entry point {eps[0].value}"):
                obj = eps[0].load()
        else:
            with plugin_code(self.kind, name, split_path(path)[0], "loading"):
                obj = load_path(path)
        if self._check is not None:
            self._check(name, obj)
        if isinstance(obj, type) and not obj.__dict__.get("name"):
            obj.name = name
        self._external[name, target] = obj
        return obj

    def find(self, name: str) -> T | None:
        """``get`` without the error: None when nothing is called ``name`` (e.g. a report of runs
        made with a plug-in that is not installed here)."""
        try:
            return self.get(name)
        except PosbenchError:
            return None

    def items(self) -> list[tuple[str, T]]:
        """Built-ins and whatever has been loaded so far (installed plug-ins load when asked for)."""
        self._discover()
        loaded = {name: obj for (name, _), obj in self._external.items()}
        return sorted({**loaded, **self._builtins}.items())


def subclass_check(base: type) -> Callable[[str, Any], None]:
    """A ``check`` that wants a subclass of ``base``."""
    def check(name: str, obj: Any) -> None:
        if not (isinstance(obj, type) and issubclass(obj, base)):
            raise PosbenchError(f"{name!r} is not a {base.__module__}.{base.__name__} subclass (got {obj!r})")
    return check
