"""The verdict on a contract change: the bump it requires, whether the declared version says so, and what
the evolution policy refuses. The policy is the new contract's `evolution` (contracts.yml defaults merged)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from delta_contracts.contract.model import ChangeClass, Contract, Policy, semver_tuple
from delta_contracts.contract.types import TypeParseError, canonical, lossless_cast
from delta_contracts.diff.changes import RANK, Change


@dataclass(frozen=True, slots=True)
class Verdict:
    changes: tuple[Change, ...]  # with the policy's classes applied
    required: ChangeClass | None  # None: nothing changed
    declared: str  # major | minor | patch | none | downgrade
    declared_ok: bool
    violations: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.declared_ok and not self.violations


def declared_bump(old_version: str, new_version: str) -> str:
    old, new = semver_tuple(old_version), semver_tuple(new_version)
    if new == old:
        return "none"
    if new < old:
        return "downgrade"
    if new[0] > old[0]:
        return "major"
    if new[1] > old[1]:
        return "minor"
    return "patch"


def verdict(old: Contract, new: Contract, changes: Sequence[Change]) -> Verdict:
    evolution = new.evolution
    effective = tuple(
        replace(c, change_class=evolution.reclassify.get(c.code, c.change_class)) for c in changes
    )
    required = max((c.change_class for c in effective), key=lambda k: RANK[k], default=None)
    declared = declared_bump(old.version, new.version)
    if required is None:
        declared_ok = declared != "downgrade"
    else:
        declared_ok = declared in RANK_OF_DECLARED and RANK_OF_DECLARED[declared] >= RANK[required]
    violations: list[str] = []
    major_bumped = semver_tuple(new.version)[0] > semver_tuple(old.version)[0]
    for c in effective:
        if c.code in evolution.allow:
            continue
        if c.code in evolution.deny:
            violations.append(f"{c.code} {c.message}: denied by the evolution policy")
        elif (
            evolution.policy is Policy.BACKWARDS_COMPATIBLE
            and c.change_class is ChangeClass.MAJOR
            and not major_bumped
        ):
            violations.append(
                f"{c.code} {c.message}: breaking, refused by backwards_compatible without a major bump"
            )
    violations.extend(unplannable(effective))
    return Verdict(effective, required, declared, declared_ok, tuple(violations))


def unplannable(changes: Sequence[Change]) -> list[str]:
    """Changes no migration can make as the contract says them, whatever the policy allows: `diff` refuses
    them as `plan` does, so that a pull request that passes the check can be planned."""
    out = []
    for c in changes:
        if c.code != "DC-MF107":
            continue
        before, after = c.columns()
        try:
            lossless = lossless_cast(before.type, after.type)
        except TypeParseError:  # not a type: lint and diff say so on their own
            continue
        if after.convert is None and not lossless and "(not field by field in place: " in c.message:
            out.append(
                f"{c.code} {c.message}: Delta cannot make this change of the fields inside {after.name} in "
                "place, and no CAST reshapes them; change the fields in steps Delta makes in place (add a "
                "nullable field, drop, rename or widen one), or declare `convert: {expression: "
                "<named_struct(…) over the previous columns>}` on the column for a versioned copy"
            )
        elif after.convert is None and not lossless:
            out.append(
                f"{c.code} {c.message}: a CAST to {canonical(after.type)} can lose values (one that "
                "overflows wraps or turns NULL, depending on the session's ANSI mode); declare `convert: "
                "{expression: <SQL over the previous columns>, inverse: <SQL back, optional>}` on the column"
            )
    return out


RANK_OF_DECLARED = {"patch": 1, "minor": 2, "major": 3}


def refusals(result: Verdict, old_version: str, new_version: str) -> list[str]:
    """Why the change is refused, in the words `diff` prints and `plan` raises (empty: accepted)."""
    out = list(result.violations)
    if not result.declared_ok:
        required = result.required.value if result.required is not None else "none"
        said = {"none": "is unchanged", "downgrade": "goes down"}.get(
            result.declared, f"is a {result.declared} bump"
        )
        out.insert(0, f"version {old_version} -> {new_version} {said}; the changes require {required}")
    return out
