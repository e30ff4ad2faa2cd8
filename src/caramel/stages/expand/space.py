"""Parameter spaces: splitting templates into their cartesian product (or zips), in JUBE's order."""

from __future__ import annotations

import itertools
from collections.abc import Collection

from caramel.errors import ExpandError, Location
from caramel.stages.expand.count import DEFAULT_MAX_WORKPACKAGES, check_product
from caramel.stages.expand.values import TooManyValues, Value, expand_template, settle
from caramel.stages.spec.model import Zip


def expand_space(
    values: dict[str, Value],
    zips: list[Zip],
    tags: Collection[str],
    limit: int = DEFAULT_MAX_WORKPACKAGES,
    where: Location | None = None,
) -> list[dict[str, Value]]:
    """All fully expanded parameter sets reachable from `values`.

    Templates present at the same time vary as a product, the first one slowest (JUBE's order);
    templates named together in a `zip` vary together. A python result that holds the separator
    becomes a new template and is split in a later round, as in JUBE. More than `limit` sets in
    all is refused before the product is built.
    """
    done: list[dict[str, Value]] = []
    work = [values]
    while work:
        current = work.pop()
        try:
            settle(current, tags, limit)
        except TooManyValues as exc:
            raise _too_many(exc, limit, where) from None
        groups = _groups(current, zips)
        if not groups:
            done.append(current)
            continue
        check_product(groups, max(1, limit - len(done) - len(work)), where)
        work.extend(reversed(_points(current, groups)))
    return done


def _points(
    current: dict[str, Value], groups: list[tuple[list[str], list[tuple[Value, ...]]]]
) -> list[dict[str, Value]]:
    """`current` with each combination of the groups' values, the first group slowest."""
    expanded = []
    for combo in itertools.product(*(choices for _, choices in groups)):
        new = dict(current)
        for (names, _), picked in zip(groups, combo, strict=False):
            new.update(zip(names, picked, strict=False))
        expanded.append(new)
    return expanded


def _too_many(exc: TooManyValues, limit: int, where: Location | None) -> ExpandError:
    """check_product's refusal, for one parameter whose values were counted as they were made."""
    if exc.stopped:
        text = (
            f"the parameters would make more than the limit of {limit:,} combinations: "
            f"{exc.name} (its command was stopped after more than {limit:,} values)"
        )
    else:
        text = (
            f"the parameters would make {exc.seen:,} combinations, more than the limit of "
            f"{limit:,}: {exc.name} ({exc.seen:,} values)"
        )
    return ExpandError(
        text,
        where,
        hint="use fewer values (or a <zip>), or raise the limit with --max-workpackages N",
    )


def _groups(
    values: dict[str, Value], zips: list[Zip]
) -> list[tuple[list[str], list[tuple[Value, ...]]]]:
    """Template groups in parameter order: single templates, or zipped templates expanded
    jointly."""
    templates = [name for name, v in values.items() if v.choices is not None]
    zipped = _zip_of(zips)
    groups = []
    seen: set[str] = set()
    for name in templates:
        if name not in seen:
            in_zip = zipped.get(name)
            members = _members(name, in_zip, values)
            seen.update(members)
            groups.append((members, _joint_values(members, values, in_zip)))
    return groups


def _zip_of(zips: list[Zip]) -> dict[str, Zip]:
    """Each zipped parameter's zip (the last that names it)."""
    zipped: dict[str, Zip] = {}
    for z in zips:
        for name in z.names:
            zipped[name] = z
    return zipped


def _members(name: str, in_zip: Zip | None, values: dict[str, Value]) -> list[str]:
    """The templates expanded jointly with `name`: those of its zip, else itself."""
    if in_zip is None:
        return [name]
    return [n for n in in_zip.names if n in values and values[n].choices is not None]


def _joint_values(
    members: list[str], values: dict[str, Value], in_zip: Zip | None
) -> list[tuple[Value, ...]]:
    """The members' values taken together, one tuple per position; the templates of `in_zip` must
    have as many values each (an error at its line)."""
    expansions = [expand_template(values[n]) for n in members]
    if len({len(e) for e in expansions}) > 1:
        sizes = ", ".join(f"{n} has {len(e)}" for n, e in zip(members, expansions, strict=False))
        raise ExpandError(
            f"zipped parameters must have as many values each: {sizes}",
            in_zip.where if in_zip else None,
            hint="give every parameter named in the <zip> the same number of values",
        )
    return list(zip(*expansions, strict=False))
