"""Filesets (`copy`, `link`) and substitutesets (`iofile` + `sub`), applied to a work folder.

`prepare` entries are shell commands: the engine runs them through its runner, in fileset order.
"""

from __future__ import annotations

import errno
import glob
import os
import re
import shutil

from caramel.errors import RunError
from caramel.fs.oserrors import cause
from caramel.fs.paths import inside, is_within
from caramel.stages.engine.commands import final_text
from caramel.stages.expand.conditions import eval_bool
from caramel.stages.spec.model import FileEntry, Substituteset


def _text(text: str, params: dict[str, str], env: dict[str, str]) -> str:
    """A path part: parameters, then `~`, then the workpackage's environment (JUBE's order)."""
    return final_text(os.path.expanduser(final_text(text, params)), env)


def split_entry(entry: FileEntry) -> list[tuple[str, str]]:
    """(path, name) pairs of one <copy>/<link>: several paths split by `separator=`, names by
    `,`."""
    paths = [
        p.strip() for p in (entry.path.split(entry.separator) if entry.separator else [entry.path])
    ]
    if not entry.name:
        return [(p, "") for p in paths]
    names = [n.strip() for n in entry.name.split(",")]
    if len(names) != len(paths):
        raise RunError(
            f"<{entry.action}> has {len(paths)} files but {len(names)} names",
            entry.where,
            hint="give one name= per file, separated by commas",
        )
    return list(zip(paths, names, strict=True))


def place(
    entry: FileEntry, params: dict[str, str], env: dict[str, str], work: str, target_work: str
) -> None:
    """Copy or link the files of one entry into `target_work` (the step's work_dir, or `work`)."""
    if not eval_bool(
        final_text(entry.active, params), f"active= of a <{entry.action}>", entry.where
    ):
        return
    source_dir = _text(entry.source_dir, params, env)
    target_dir = _text(entry.target_dir, params, env)
    for raw_path, raw_name in split_entry(entry):
        pathname = os.path.join(source_dir, _text(raw_path, params, env))
        if entry.rel_path_ref == "internal":
            pathname = os.path.join(work, pathname)
        else:
            pathname = os.path.normpath(os.path.join(entry.base_dir, pathname))
        name = _text(raw_name, params, env) if raw_name else os.path.basename(pathname)
        matches = sorted(glob.glob(pathname))
        if not matches:
            raise RunError(
                f"<{entry.action}>: no file matches {pathname!r}",
                entry.where,
                hint="check the path (relative to the benchmark file, or to the work folder "
                'with rel_path_ref="internal")',
            )
        for path in matches:
            # Several matches (a glob) keep their own names; a name= applies to a single file.
            if len(matches) > 1 or (pathname != path and name == os.path.basename(pathname)):
                name = os.path.basename(path)
            # a name made of parameters stays in the work folder (fs.paths), as target_dir= does
            target = inside(
                target_work,
                os.path.join(target_dir, name),
                f"<{entry.action}> target",
                entry.where,
                absolute_ok=True,
            )
            _put(entry, path, target)


def _put(entry: FileEntry, path: str, target: str) -> None:
    """Copy or link one file or folder; every failure names both paths and the real cause."""
    if os.path.lexists(target):
        return
    _refuse_copy_into_itself(entry, path, target)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _copy_or_link(entry.action, path, target)
    except shutil.Error as exc:  # copytree gathers its failures: (source, target, why) each
        failures = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        first = failures[0] if failures else (path, target, str(exc))
        more = f" (and {len(failures) - 1} more files)" if len(failures) > 1 else ""
        raise RunError(
            f"<{entry.action}> {path} -> {target}: cannot copy {first[0]}: {_why(first[2])}{more}",
            entry.where,
        ) from None
    except OSError as exc:
        named = f" ({exc.filename})" if exc.filename and exc.filename not in (path, target) else ""
        raise RunError(
            f"<{entry.action}> {path} -> {target}: {cause(exc)}{named}",
            entry.where,
            hint=_hint(exc),
        ) from None


def _refuse_copy_into_itself(entry: FileEntry, path: str, target: str) -> None:
    """A RunError for a folder copied to a target inside itself (it would copy itself for ever)."""
    if entry.action != "copy" or not os.path.isdir(path):
        return
    if is_within(os.path.realpath(path), os.path.realpath(target)):
        raise RunError(
            f"<copy> {path} -> {target}: the target is inside the folder it copies (it would copy "
            "itself for ever)",
            entry.where,
            hint=(
                "copy only the files the step needs, or put the outpath outside the benchmark's "
                "folder"
            ),
        )


def _copy_or_link(action: str, path: str, target: str) -> None:
    """A link to `path` (relative where `path` is), or a copy of the file or the folder (its links
    kept as links)."""
    if action == "link":
        os.symlink(
            path if os.path.isabs(path) else os.path.relpath(path, os.path.dirname(target)), target
        )
    elif os.path.isdir(path):
        shutil.copytree(path, target, symlinks=True)
    else:
        shutil.copy2(path, target)


def _why(text: str) -> str:
    """copytree's reason text ("[Errno 28] No space left on device: '...'") without the errno
    noise."""
    return re.sub(r"^\[Errno \d+\] ", "", str(text)).split(": '")[0].lower() or "unknown cause"


def _hint(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free space where the run folder is (df -h), then bench continue copies again"
    return ""


def apply_substituteset(sset: Substituteset, params: dict[str, str], folder: str) -> None:
    """Write each iofile's `out` from its `in`, with every `sub` applied (text or regex)."""
    subs: dict[str, tuple[str, str]] = {}
    for s in sset.subs:
        source = final_text(s.source, params)
        subs[source] = (
            s.mode,
            final_text(s.dest, params),
        )  # a later sub of the same source wins, as in JUBE
    for iofile in sset.iofiles:
        infile = os.path.join(folder, final_text(iofile.source, params))
        outfile = os.path.join(folder, final_text(iofile.dest, params))
        if not os.path.isfile(infile):
            raise RunError(
                f"substituteset '{sset.name}': file {infile} not found",
                iofile.where,
                hint="copy or link it into the work folder with a fileset the step uses",
            )
        with open(infile, encoding="utf-8") as handle:
            text = handle.read()
        for source, (mode, dest) in subs.items():
            if mode == "text":
                text = text.replace(source, dest)
            else:
                try:
                    text = re.sub(source, dest, text)
                except re.error as exc:
                    raise RunError(
                        f"substituteset '{sset.name}': bad regex {source!r}: {exc}", sset.where
                    ) from None
        mode = iofile.out_mode if iofile.out_mode in ("w", "a") else "w"
        with open(outfile, mode, encoding="utf-8") as handle:
            handle.write(text)
        if os.path.abspath(infile) != os.path.abspath(outfile):
            shutil.copymode(infile, outfile)
