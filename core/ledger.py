"""The claims ledger: every claim's declaration and decision code fingerprinted in a committed lock, and every
change to them recorded with its date, old rule, new rule and reason.

Each paper keeps
- `papers/<name>/claims.py`: `claims(cfg)` (the declarations) and the functions that measure them from the
  stored Results (a claim's `measure`, else the paper's `decide`);
- `papers/<name>/ledger.py`: `LEDGER`, a list of `Change`s, oldest first;
- `papers/<name>/claims.lock.json`: per claim, the fingerprint of its declaration (at the default config) and of
  the code that measures and decides it (core.provenance's closure of its measure and its rule: every function,
  class and constant they reach, across modules); `baseline` holds the fingerprints the ledger started from;
  `ledger` a digest of every entry of the ledger when the lock was written.

`check_lock(paper)` (run by the test suite) lists every disagreement: a claim whose fingerprint differs from the
lock, a lock entry that no ledger entry accounts for, a claim added or dropped without an entry, and a ledger entry
edited or removed after the lock recorded it (the ledger is append-only: a correction is a new entry). After a
change, add a `Change` carrying the new fingerprint (`python scripts/claims.py lock <paper>` prints it) and rerun
that command to rewrite the lock; it refuses while a changed claim has no entry, except where only decision code
changed and re-deciding the paper's reference record gives identical values and verdicts (`redecide_differences`):
then it appends the `code` entries itself (`write_code_entry`), naming the record.

A re-specified claim's report shows its original rule's verdict beside the new one: the old rule evaluated on the
same run where `old_rule` is given (the statistic is unchanged, only the rule moved), otherwise the verdict last
recorded under the old rule, with the commit and run that produced it.

One module over 400 lines: the ledger entries, the claims lock and the re-decision differences share one
fingerprint of a claim and of its code; the lock is checked against the entries and written from them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.claims import Claim, Rule, Verdict, undefined_interval
from core.paper import find_paper
from core.provenance import REPO_ROOT, callable_units, units_fingerprint

CHANGE_KINDS = ("added", "respecified", "code", "labelled", "removed")


@dataclass(frozen=True)
class Change:
    """One entry of a paper's ledger.

    kind: added (a new claim), respecified (its rule, figure or statistic changed), code (the code that measures it
    changed, the rule did not), labelled (its declaration's labels changed: where its figure and margin come from,
    its sample size, why no sample can decide it; rule, figure and statistic did not: the verdict moves only where a
    secondary or missing source makes it unverified), removed (it left the claims: `moved_to` says where: a test, an
    analytic, calibration or construction row, another claim).
    old / new: the rule as text before and after. reason: why, including whether a result had been seen.
    old_rule: the old rule as a Rule, where it can be evaluated on the new statistic (the report then shows its
    verdict on the same run). old_verdict, commit, run: otherwise, the last verdict recorded under the old rule
    and where it came from.
    fingerprint: the claim's fingerprint after the change ("" for entries that predate the lock, and for removed).
    """

    date: str
    claim: str
    kind: str
    old: str
    new: str
    reason: str
    old_rule: Rule | None = None
    old_verdict: str = ""
    commit: str = ""
    run: str = ""
    moved_to: str = ""
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if self.kind not in CHANGE_KINDS:
            raise ValueError(f"ledger entry for {self.claim!r}: kind {self.kind!r} is not one of {CHANGE_KINDS}")
        try:
            dt.date.fromisoformat(self.date)
        except ValueError as e:
            raise ValueError(f"ledger entry for {self.claim!r}: date {self.date!r} is not YYYY-MM-DD") from e
        if self.kind == "removed" and not self.moved_to:
            raise ValueError(f"ledger entry for {self.claim!r}: a removed claim must say where it went (moved_to)")
        if not self.reason.strip():
            raise ValueError(f"ledger entry for {self.claim!r}: give the reason for the change")

    def original_verdict(self, claim: Claim | None) -> str:
        """The original rule's verdict as the report shows it."""
        if self.old_rule is not None and claim is not None and claim.ours is not None:
            try:
                v = (
                    Verdict.UNDECIDED
                    if undefined_interval(claim.ours)
                    else self.old_rule.verdict(claim.ours, claim.paper)
                )
            except (TypeError, ValueError, ArithmeticError):
                v = Verdict.FAILS
            return f"{v.value} on this run"
        if self.old_verdict:
            where = ", ".join(x for x in (self.commit and f"commit {self.commit}", self.run) if x)
            return f"{self.old_verdict} (last recorded{': ' + where if where else ''})"
        return "not recorded"

    def to_dict(self, claim: Claim | None = None) -> dict[str, Any]:
        return {
            "date": self.date,
            "claim": self.claim,
            "kind": self.kind,
            "old": self.old,
            "new": self.new,
            "reason": self.reason,
            "original_verdict": self.original_verdict(claim),
            "moved_to": self.moved_to,
            "fingerprint": self.fingerprint,
        }


# The reasons of two entries every paper's ledger has, one per claim (issue 58): written once, here.
ISSUE_58_FORM = (
    "issue 58: no code that measures or decides these claims changed; their fingerprint changed form. It "
    "now hashes tokens (the same on Python 3.11, 3.12 and 3.13, where ast.dump was not) of every "
    "function, class and constant the claim's measure and rule reach across modules (core.stats and "
    "core.claims included; before, only the helpers in the claim's own module were followed). In the same "
    "change core.claims decides an undefined interval (a NaN in it, or an infinite bound around a finite "
    "estimate: a bootstrap undefined on some resamples) undecided, where it failed, and an interval that "
    "is one infinite value (a diverged run's gap) as that value, where it failed: only a 'fails' can "
    "change, and no stored verdict does (no reference record holds a non-finite figure, and the last "
    "default runs of bess, sparq, fp8_llm and gps in results/pending.yaml failed no claim)"
)
ISSUE_58_CORRECTION = (
    "issue 58, a correction of this claim's entry above of the same date: no code that measures or "
    "decides it changed otherwise. That entry said core.claims would decide an interval that is one "
    "infinite value (a diverged run's gap) as that value; it does not: such an interval fails a rule as "
    "before (like text, NaN or an infinite point), and a claim where diverging should hold says so with "
    "or_diverged. What stays of that entry: an undefined interval (a NaN in it, or an infinite bound "
    "around a finite estimate) is undecided, with its reason in the claim's detail. The fingerprint also "
    "moves because the closure no longer follows a function's signature annotations (never executed). No "
    "stored verdict changes"
)


def entry_digest(entry: Change) -> str:
    """12 hex digits of everything a ledger entry says (its old rule by description and kind): the lock keeps one
    per entry, so an entry edited after it was locked is found (`check_lock`)."""
    fields = {k: v for k, v in dataclasses.asdict(entry).items() if k != "old_rule"}
    if entry.old_rule is not None:
        fields["old_rule"] = [entry.old_rule.description, entry.old_rule.kind]
    return _sha(json.dumps(fields, sort_keys=True, default=str))


def code_changes(
    date: str, reason: str, fingerprints: dict[str, str], *, commit: str = "", run: str = ""
) -> list[Change]:
    """One 'code' entry per claim where the code that measures or decides it changed and its declaration did not
    (the same statistic, rule and figure): `fingerprints` maps each claim to its new fingerprint."""
    return [
        Change(date, cid, "code", "unchanged", "unchanged", reason, commit=commit, run=run, fingerprint=fp)
        for cid, fp in fingerprints.items()
    ]


def label_changes(date: str, reason: str, fingerprints: dict[str, str]) -> list[Change]:
    """One 'labelled' entry per claim whose declaration gained or changed labels (figure and margin sources, sample
    size, undecidable) and nothing else: `fingerprints` maps each claim to its new fingerprint."""
    return [
        Change(date, cid, "labelled", "unchanged", "unchanged", reason, fingerprint=fp)
        for cid, fp in fingerprints.items()
    ]


# ---------------------------------------------------------------------------------------------- fingerprints


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def claim_fingerprint(claim: Claim, default_measure: Callable[..., Any] | None = None) -> dict[str, str]:
    """{'declaration': ..., 'code': ..., 'fingerprint': ...} for one claim: the declaration as JSON, and the source of
    its measuring function (the claim's own, else the paper's `measure`) with its rule's decision function: the code
    each can reach (core.provenance.callable_units: across modules, so a helper in core.stats is watched like one in
    the claim's own module)."""
    declaration = _sha(json.dumps(claim.declaration(), sort_keys=True, default=str))
    measure = claim.measure or default_measure
    units = callable_units(claim.rule.check)
    if measure is not None:
        units.update(callable_units(measure))
    code = units_fingerprint(units)
    return {"declaration": declaration, "code": code, "fingerprint": _sha(declaration + code)}


# ---------------------------------------------------------------------------------------------- the lock


@dataclass
class PaperClaims:
    """A paper's claims at its default config, its ledger and where its lock lives."""

    paper: str
    claims: list[Claim]
    ledger: list[Change]
    default_measure: Callable[..., Any] | None
    lock_path: Path

    def fingerprints(self) -> dict[str, dict[str, str]]:
        return {c.id: claim_fingerprint(c, self.default_measure) for c in self.claims}

    def read_lock(self) -> dict[str, Any]:
        if not self.lock_path.is_file():
            return {"claims": {}, "baseline": {}}
        return json.loads(self.lock_path.read_text())


def default_config(paper: str) -> Any:
    """The run config `run` gets at the default scale: `cfg.<paper>` is the paper's Config() (whose defaults are
    the default scale's), `cfg.scale.name` is 'default'."""
    from types import SimpleNamespace

    config_cls = find_paper(f"papers.{paper}").Config
    return SimpleNamespace(
        **{paper: config_cls()},
        seed=0,
        scale=SimpleNamespace(name=SimpleNamespace(value="default")),
    )


def load_paper_claims(paper: str, root: Path = REPO_ROOT) -> PaperClaims:
    """The paper's declarations at its default config, its ledger and its decide function (the code a claim
    without a `measure` of its own is decided by); nothing here imports JAX."""
    spec = find_paper(f"papers.{paper}")
    claims = spec.declare(default_config(paper))
    decide = spec.load("decide")
    return PaperClaims(paper, claims, spec.load("ledger"), decide, root / "papers" / paper / "claims.lock.json")


def latest_entries(ledger: Iterable[Change]) -> dict[str, Change]:
    """Per claim, its newest entry that carries a fingerprint or removes it."""
    out: dict[str, Change] = {}
    for entry in ledger:
        if entry.fingerprint or entry.kind == "removed":
            out[entry.claim] = entry
    return out


def edited_entries(pc: PaperClaims) -> list[str]:
    """Ledger entries changed or removed after the lock recorded them (the ledger is append-only), as sentences."""
    locked = pc.read_lock().get("ledger")
    if locked is None:
        return []
    now = [entry_digest(e) for e in pc.ledger]
    out = []
    for i, digest in enumerate(locked):
        if i >= len(now):
            out.append(
                f"{pc.paper}: ledger entry {i + 1} of the {len(locked)} the lock records was removed: entries are "
                f"append-only; restore it (`git log -p papers/{pc.paper}/ledger.py` shows it)"
            )
            break
        if now[i] != digest:
            e = pc.ledger[i]
            out.append(
                f"{pc.paper}: ledger entry {i + 1} ({e.date}, {e.claim!r}, {e.kind}) was edited after it was "
                f"recorded: entries are append-only; restore it (`git log -p papers/{pc.paper}/ledger.py` shows "
                "the original) and write the correction as a new entry"
            )
    return out


def check_lock(pc: PaperClaims) -> list[str]:
    """Every disagreement between the claims, the lock and the ledger, as sentences; [] when all agree."""
    problems: list[str] = edited_entries(pc)
    lock = pc.read_lock()
    if "ledger" not in lock and lock.get("claims"):
        problems.append(f"{pc.paper}: the lock records no digest of the ledger's entries: run the lock command")
    locked, baseline = lock.get("claims", {}), lock.get("baseline", {})
    current = pc.fingerprints()
    latest = latest_entries(pc.ledger)
    where = f"papers/{pc.paper}"
    fix = (
        f"record the change as a Change in {where}/ledger.py (date, claim, old rule, new rule, reason, and the new "
        f"fingerprint that `python scripts/claims.py lock {pc.paper}` prints), then run that command"
    )
    for cid, fp in current.items():
        if cid not in locked:
            problems.append(f"{pc.paper}: claim {cid!r} is not in {where}/claims.lock.json: {fix}")
            continue
        if fp["fingerprint"] != locked[cid]["fingerprint"]:
            what = [k for k in ("declaration", "code") if fp[k] != locked[cid].get(k)]
            problems.append(
                f"{pc.paper}: claim {cid!r}: its {' and '.join(what) or 'fingerprint'} differs from the lock "
                f"({locked[cid]['fingerprint']} -> {fp['fingerprint']}): {fix}"
            )
    for cid, entry in locked.items():
        if cid not in current:
            removed = cid in latest and latest[cid].kind == "removed"
            problems.append(
                f"{pc.paper}: claim {cid!r} is in the lock but no longer declared: "
                + (f"run `python scripts/claims.py lock {pc.paper}`" if removed else fix)
            )
            continue
        expected = latest[cid].fingerprint if cid in latest else baseline.get(cid, {}).get("fingerprint")
        if entry["fingerprint"] != expected:
            problems.append(
                f"{pc.paper}: claim {cid!r}: the lock's fingerprint {entry['fingerprint']} is not the one its newest "
                f"ledger entry records ({expected or 'none'}): the lock was rewritten without a ledger entry; {fix}"
            )
    for cid, entry in latest.items():
        if entry.kind == "removed" and cid in current:
            problems.append(f"{pc.paper}: claim {cid!r} is recorded as removed ({entry.date}) but is still declared")
    for cid in set(baseline) - set(current):
        if cid not in latest or latest[cid].kind != "removed":
            problems.append(f"{pc.paper}: claim {cid!r} was dropped without a 'removed' ledger entry: {fix}")
    return problems


def write_lock(pc: PaperClaims) -> list[str]:
    """Rewrite the lock from the current claims, or refuse: the claims whose change has no ledger entry."""
    edited = edited_entries(pc)
    if edited:
        return edited
    lock = pc.read_lock()
    locked, baseline = lock.get("claims", {}), lock.get("baseline", {})
    current = pc.fingerprints()
    latest = latest_entries(pc.ledger)
    missing = []
    for cid, fp in current.items():
        known = locked.get(cid, {}).get("fingerprint")
        if fp["fingerprint"] != known and (cid not in latest or latest[cid].fingerprint != fp["fingerprint"]):
            if not locked and not baseline:
                continue  # the first lock of a paper: its baseline
            missing.append(f"{cid} (fingerprint {fp['fingerprint']})")
    for cid in set(locked) - set(current):
        if cid not in latest or latest[cid].kind != "removed":
            missing.append(f"{cid} (dropped: needs a 'removed' entry saying where it went)")
    if missing:
        return missing
    if not baseline:
        baseline = current
    payload = {
        "paper": pc.paper,
        "note": "written by scripts/claims.py lock; a change needs an entry in ledger.py (core/ledger.py)",
        "claims": current,
        "baseline": baseline,
        "ledger": [entry_digest(e) for e in pc.ledger],
    }
    from core.io import atomic_write_text

    atomic_write_text(pc.lock_path, json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return []


def papers_with_claims(root: Path = REPO_ROOT) -> list[str]:
    """Every paper package with a protocol object (papers/<name>/__init__.py defining PAPER)."""
    return sorted(p.parent.name for p in (root / "papers").glob("*/__init__.py") if "PAPER = Paper(" in p.read_text())


# ---------------------------------------------------------------------------------------------- automatic code entries


def code_only_changes(pc: PaperClaims) -> dict[str, str] | None:
    """{claim: new fingerprint} of the claims whose decision code changed and whose declaration did not, where that
    is every change the lock has no entry for; None where some other change (a declaration, a claim added or
    dropped) needs an entry written by hand; {} where nothing changed."""
    lock = pc.read_lock()
    locked = lock.get("claims", {})
    latest = latest_entries(pc.ledger)
    out: dict[str, str] = {}
    for cid, fp in pc.fingerprints().items():
        known = locked.get(cid)
        if known is None:
            return None
        if fp["fingerprint"] == known["fingerprint"]:
            continue
        if cid in latest and latest[cid].fingerprint == fp["fingerprint"]:
            continue  # its entry is written
        if fp["declaration"] != known.get("declaration"):
            return None
        out[cid] = fp["fingerprint"]
    if set(locked) - {c.id for c in pc.claims}:
        return None
    return out


def redecide_differences(folder: Path) -> list[str]:
    """Re-decide the stored record in `folder` with the checkout's decision code (nothing written) and list how its
    claims, facts and estimates differ from the stored decision; [] when identical."""
    from core.record import decided_values, read_record

    record = read_record(folder)
    decided = record.paper.decide_results(record.config(), record.results())
    now = json.loads(json.dumps(decided_values(decided), default=str))
    stored = record.claims
    out = []
    keys = ("id", "ours", "verdict", "holds", "detail", "rule_verdict")
    before = {c["id"]: {k: c.get(k) for k in keys} for c in stored.get("claims", [])}
    for c in now["claims"]:
        if before.get(c["id"]) != {k: c.get(k) for k in keys}:
            out.append(f"claim {c['id']}: {before.get(c['id'])} -> { ({k: c.get(k) for k in keys}) }")
    for part in ("facts", "estimates"):
        if now[part] != stored.get(part):
            out.append(f"{part} differ")
    return out


def _wrapped(text: str, indent: str, width: int = 100) -> str:
    """`text` as adjacent string literals of at most `width` characters a line (the same string when read back)."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + len(word) + 1 > width:
            lines.append(line + " ")
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(f"{indent}{json.dumps(chunk)}" for chunk in lines)


def write_code_entry(
    pc: PaperClaims, fingerprints: dict[str, str], records: list[str], date: str, reason: str = ""
) -> str:
    """Append one `code` entry per claim in `fingerprints` to the paper's ledger.py (the automatic entry: only
    decision code changed, and re-deciding `records` gave identical values and verdicts); returns the text added."""
    path = pc.lock_path.parent / "ledger.py"
    text = path.read_text()
    if "code_changes" not in text.split("LEDGER", 1)[0]:
        raise RuntimeError(f"{path}: import code_changes from core.ledger before LEDGER to take automatic entries")
    reason = reason or (
        "only the code that decides these claims changed (declarations, statistics and rules did not), and "
        f"re-deciding {', '.join(records)} with it gave identical claims, facts, estimates and verdicts; written "
        f'by `make claims ARGS="lock {pc.paper}"`'
    )
    # double-quoted (json.dumps), as ruff formats the ledger: the entry is written as `make lint` keeps it
    items = "".join(f"        {json.dumps(cid)}: {json.dumps(fp)},\n" for cid, fp in fingerprints.items())
    head = f"automatic entry ({date}): decision code changed, re-decided {', '.join(records)} identically"
    added = (
        f"\n# {head if records else f'code entry ({date})'}\n"
        f"LEDGER += code_changes(\n    {json.dumps(date)},\n{_wrapped(reason, '    ')},\n    {{\n{items}    }},\n"
        + (f"    run={json.dumps(', '.join(records))},\n" if records else "")
        + ")\n"
    )
    from core.io import atomic_write_text

    atomic_write_text(path, text.rstrip("\n") + "\n" + added)
    return added
