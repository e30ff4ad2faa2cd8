"""Building and pulling Apptainer images through spython (which runs the `singularity` command;
Apptainer installs it as a link to itself)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from caramel.errors import CaramelError, did_you_mean
from caramel.resources import shipped


class _Spython(Protocol):
    """What caramel calls of spython's client (which ships no type information)."""

    def build(self, **options: object) -> object: ...

    def pull(self, uri: str, **options: object) -> object: ...


def _client() -> _Spython:
    try:
        from spython.main import Client
        from spython.utils import check_install
    except ImportError as error:
        raise CaramelError(
            "spython is not installed", hint="pip install spython (caramel's [container] extra)"
        ) from error
    if not check_install("singularity", quiet=True):
        raise CaramelError(
            "neither apptainer nor singularity is installed here (spython runs `singularity`)",
            hint="run this on a system with Apptainer, or use --dry-run to see the command",
        )
    client: _Spython = Client
    return client


def find_definition(definition: Path) -> tuple[Path, bool]:
    """The definition file `definition` names: the path itself when it exists, else, for a bare name
    (`pytorch.def`, `pytorch`), caramel's shipped one of that name (wherever caramel is installed);
    whether it is a shipped one. A CaramelError names the shipped ones when neither exists."""
    if definition.is_file() or definition.parent != Path("."):
        return definition, False
    folder = shipped("containers")
    name = definition.name if definition.suffix == ".def" else f"{definition.name}.def"
    if (folder / name).is_file():
        return folder / name, True
    known = sorted(p.name for p in folder.glob("*.def"))
    raise CaramelError(
        f"{definition}: no such definition file here, nor among caramel's ({folder})",
        hint=did_you_mean(name, known) or "caramel's definition files: " + ", ".join(known),
    )


def build_command(definition: Path, image: Path, fakeroot: bool = True) -> list[str]:
    """The exact command spython runs for `build`."""
    return [
        "singularity",
        "build",
        *(["--fakeroot"] if fakeroot else []),
        str(image),
        str(definition),
    ]


def pull_command(uri: str, image: Path) -> list[str]:
    return ["singularity", "pull", "--name", str(image.parent.resolve() / image.name), uri]


def build(definition: Path, image: Path, fakeroot: bool = True) -> Path:
    if not definition.is_file():
        raise CaramelError(
            f"{definition}: no such definition file", hint="the files in containers/ end in .def"
        )
    client = _client()
    client.build(
        recipe=str(definition),
        image=str(image),
        sudo=False,
        options=["--fakeroot"] if fakeroot else [],
        quiet=True,
    )
    if not image.exists():
        raise CaramelError(
            f"building {image} from {definition} failed", hint="see the messages above"
        )
    return image


def pull(uri: str, image: Path) -> Path:
    client = _client()
    client.pull(uri, name=image.name, pull_folder=str(image.parent.resolve()), quiet=True)
    if not image.exists():
        raise CaramelError(f"pulling {uri} to {image} failed", hint="see the messages above")
    return image
