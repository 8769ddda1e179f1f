"""What a conformance run found: one outcome per vector and check, and the pass/fail table."""

from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass(frozen=True, slots=True)
class Outcome:
    vector: str
    check: str
    status: str
    detail: str


@dataclass(frozen=True, slots=True)
class Report:
    target: str
    role: str
    mode: str
    outcomes: tuple[Outcome, ...]

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def ok(self) -> bool:
        return self.count(FAIL) == 0 and bool(self.outcomes)

    def format(self) -> str:
        """The pass/fail table and a one-line summary."""
        rows = [("RESULT", "VECTOR", "CHECK", "DETAIL")]
        rows += [(o.status, o.vector, o.check, o.detail) for o in self.outcomes]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
        lines.append(f"conformance ({self.role} role, {self.mode}) {self.target}: "
                     f"{self.count(PASS)} passed, {self.count(FAIL)} failed, {self.count(SKIP)} skipped")
        return "\n".join(lines)


__all__ = ["FAIL", "PASS", "SKIP", "Outcome", "Report"]
