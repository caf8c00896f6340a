"""Contract diff: classified changes between two versions of a contract, and the verdict on them."""

from delta_contracts.diff.changes import CODES, Change
from delta_contracts.diff.compare import Comparison, compare, diff
from delta_contracts.diff.policy import Verdict, declared_bump, verdict

__all__ = ["CODES", "Change", "Comparison", "Verdict", "compare", "declared_bump", "diff", "verdict"]
