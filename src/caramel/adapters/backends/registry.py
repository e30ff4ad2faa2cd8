"""A registry of classes by name, filled by the modules of one package (ReFrame's registry idea):
`@REGISTRY.register("slurm")` on a class in a module of the package makes it known; `names()` and
`get()` import the package's modules once, so a new module is all a new scheduler or launcher
needs."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from caramel.errors import RunError, did_you_mean

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str, path: Iterable[str]) -> None:
        self.kind, self.package, self.path = kind, package, list(path)
        self.classes: dict[str, type[T]] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Class decorator: make a class available under `name` (a name is taken once)."""

        def wrap(cls: type[T]) -> type[T]:
            if self.classes.get(name, cls) is not cls:
                raise ValueError(f"a {self.kind} is already registered as {name!r}")
            if not getattr(cls, "name", ""):
                cls.name = name  # type: ignore[attr-defined]
            self.classes[name] = cls
            return cls

        return wrap

    def _load_modules(self) -> None:
        """Import every module of the package once: importing one registers what it defines."""
        if not self._loaded:
            for module in pkgutil.iter_modules(self.path):
                importlib.import_module(f"{self.package}.{module.name}")
            self._loaded = True

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._load_modules()
        return sorted(self.classes)

    def get(self, name: str, **options: Any) -> T:
        """A new instance of the class registered as `name`; a RunError names the known ones."""
        if name not in self.classes:
            self._load_modules()
        cls = self.classes.get(name)
        if cls is None:
            known = self.names()
            raise RunError(
                f"no {self.kind} named {name!r}",
                hint=did_you_mean(name, known) or f"{self.kind}s: " + ", ".join(known),
            )
        return cls(**options)
