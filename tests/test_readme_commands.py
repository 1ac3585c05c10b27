"""Every shell command the READMEs document runs as written, as tests/test_readme.py runs their Python examples.

What counts as a documented command: each command of a fenced ```bash / ```sh / ```shell / ```console block (one
per line; a `\\` continuation and a for/while/if ... done/fi compound are one command; a trailing `# comment` and a
`$ ` prompt are dropped; in a console block only `$ ` lines are commands), and each inline `code span` of the prose
that starts with a command (`make`, `python`, `wandb`, ... or an executable of the repository such as `.ci/run`).

Each one is in exactly one class of RULES below, the table a reader audits: RUN (in `make test`: a few seconds),
SLOW (marked slow: `make test-all` only) or SKIP (with its reason, one of SKIP_REASONS). A command no rule names, or
that two rules name, fails `test_every_documented_command_is_classified` with its README and line: a new or changed
README command is classified before the suite passes. A rule that names no documented command fails too.

How a command runs: in a fresh copy of the working tree (its tracked files and the untracked ones git does not
ignore, with their modification times, and .venv linked), from the copy's root, with `bash -c`, `.venv/bin` first
on PATH and PYTHONPATH set to the copy (so the copy's code is imported, not the checkout's through the editable
install), without the MAKEFLAGS of a surrounding `make test`, and a timeout. So what a command writes (outputs/, a
rewritten README) lands in the copy and never in the shared checkout. It must exit 0 (or the status its rule states),
and must leave every file it was given unchanged, except the tracked files its rule says the command documents
rewriting (`writes`).

Placeholders, substituted by `substitute` (a command that still holds one afterwards fails, naming it):
    <name>, <paper>        -> prng (the paper whose runs take seconds at smoke scale and 95 s at default scale)
    [X] (an optional part) -> X (the option given)
    <dir>                  -> outputs/prng/latest (the stored run that the rule's setup puts there)
    DIR                    -> outputs/readme-commands (a new directory in the copy)
A rule whose command is run differently from its substituted text says so (`run`) and why.

Preconditions (`setup`): "run:<paper>" puts a stored run of <paper> at outputs/<paper>/latest in the copy, as
"after a run" in the README: the paper's committed reference run (results/<paper>/), or, for a paper without one,
its stored smoke Results (tests/fixtures/results/<paper>/results.json).

Counts on 2026-11-28 (`python -m tests.test_readme_commands` prints them and lists every command by class): 117
documented commands, 70 distinct (each distinct command runs once); RUN 15 distinct (37 occurrences), about 27 s
together on the 2-core machine; SLOW 14 (15), about 5.5 minutes together, 2 of them prng's default-scale run and
compare; SKIP 41 (65): default scale 8, after the sweep 1, reference 5, benchmark 5, the test suite 4, installs 4,
your files 4, prose 3, minutes 2, missing tool 2, git history 1, uploads 1, cluster 1.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.test_readme import READMES

SHELL_FENCES = ("bash", "sh", "shell", "console", "zsh")
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
PARAGRAPH_BREAK = re.compile(r"(\n[ \t]*\n|\n(?=[ \t]*(?:[-*+]|\d+\.) ))")  # a blank line, or a list item next
# the first word of an inline code span that makes it a command
COMMAND_WORDS = ("make", "python", "python3", "wandb", "pytest", "pip", "uv", "git", "bash", "sh", "ruff")
ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")
OPENERS, CLOSERS = {"for", "while", "until", "if", "case", "select"}, {"done", "fi", "esac"}


@dataclass(frozen=True)
class Occurrence:
    """A documented command: where it is and its text (whitespace runs made one space, except a compound's lines)."""

    readme: str
    line: int
    text: str
    where: str  # "block" (a fenced shell block) or "prose" (an inline code span)

    def __str__(self) -> str:
        return f"{self.readme}:{self.line}: `{self.text}`"


def strip_comment(line: str) -> str:
    """`line` without a trailing shell comment: a `#` at the start or after a blank, outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _depth_change(code: str) -> int:
    """Compound commands opened minus closed on a line (for/while/if/case against done/fi/esac), quotes ignored."""
    words = re.sub(r"'[^']*'|\"[^\"]*\"", " ", code).replace(";", " ; ").split()
    return sum(w in OPENERS for w in words) - sum(w in CLOSERS for w in words)


def block_commands(body: str, first_line: int, console: bool) -> list[tuple[int, str]]:
    """(line, command) of each command of a fenced shell block whose first body line is `first_line`: lines ending
    in `\\` joined to the next by a space, and a compound's lines (for ... done) joined by newlines."""
    logical: list[tuple[int, str]] = []  # (first line, text) with continuations joined
    pending: list[str] = []
    start = 0
    for i, raw in enumerate(body.splitlines()):
        line = raw.rstrip()
        if console and not pending:
            if not line.startswith("$ "):
                continue  # a console block's output
            line = line[2:]
        code = strip_comment(line)
        if not code.strip() and not pending:
            continue
        if not pending:
            start = first_line + i
        continued = code.endswith("\\")
        pending.append((code[:-1] if continued else code).strip())
        if not continued:
            logical.append((start, " ".join(pending)))
            pending = []
    if pending:
        logical.append((start, " ".join(pending)))
    commands: list[tuple[int, str]] = []
    group: list[str] = []
    depth = 0
    for line, text in logical:
        if not group:
            start = line
        group.append(text)
        depth += _depth_change(text)
        if depth <= 0:
            commands.append((start, "\n".join(group)))
            group, depth = [], 0
    if group:
        commands.append((start, "\n".join(group)))
    return commands


def span_is_command(text: str) -> bool:
    """Whether an inline code span is a command: its first word after VAR=value assignments is a command word or an
    executable file of the repository without an extension (`.ci/run`)."""
    words = text.split()
    while words and ASSIGNMENT.fullmatch(words[0]):
        words = words[1:]
    if not words:
        return False
    first = words[0]
    if first in COMMAND_WORDS:
        return len(words) > 1 or first == "make"  # a lone `wandb` or `python` names the tool, not a command
    path = REPO_ROOT / first
    return "/" in first and not path.suffix and path.is_file() and os.access(path, os.X_OK)


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each paragraph or list item of a README's prose (its fenced blocks left out), the units
    a code span cannot cross."""
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    out, line = [], 1
    for part in PARAGRAPH_BREAK.split(prose):
        out.append((line, part))
        line += part.count("\n")
    return out


def occurrences(readme: str) -> list[Occurrence]:
    """Every documented command of one README, in order of its lines."""
    text = (REPO_ROOT / readme).read_text()
    found = []
    for m in FENCE.finditer(text):
        if m.group(1).lower() in SHELL_FENCES:
            first = text[: m.start(2)].count("\n") + 1
            for line, command in block_commands(m.group(2), first, console=m.group(1).lower() == "console"):
                found.append(Occurrence(readme, line, command, "block"))
    for line, paragraph in paragraphs(text):
        for m in SPAN.finditer(paragraph):
            span = " ".join(m.group(1).split())
            if span_is_command(span):
                found.append(Occurrence(readme, line + paragraph[: m.start()].count("\n"), span, "prose"))
    return sorted(found, key=lambda o: o.line)


OCCURRENCES = [o for readme in READMES for o in occurrences(readme)]


# ---------------------------------------------------------------------------------------------------------------------
# The classification. Each rule names documented commands by their exact text (`text`, whitespace as in Occurrence)
# or by a regular expression over it (`regex`, matched whole).

RUN, SLOW, SKIP = "run", "slow", "skip"

SKIP_REASONS = {
    "default scale": "a reproduction at default or full scale: 20-45 minutes or more on a 2-core CPU, or many runs of "
    "it (the README's own first command, `make reproduce PAPER=prng` then `make compare PAPER=prng`, runs at default "
    "scale in the slow tests; every paper's smoke run is in the test suite)",
    "the test suite": "runs the test suite, of which this test is a part (12 minutes and more)",
    "installs": "creates or rewrites .venv or the lock from the package index: network, and the shared .venv",
    "uploads": "uploads to a wandb account: network and credentials",
    "cluster": "submits jobs to SLURM, which this machine does not have",
    "missing tool": "pipes into dieharder, a C program that is no Python package and is not installed here",
    "your files": "labels the reader's own molecule files (mols.smi, geometries.xyz, an ARGS of '...'); the labelling "
    "itself is tested in tests/papers/qm1b/test_label.py",
    "git history": "re-keys every reference from the commits that made them (a git archive of each), needed only after "
    "a change of the fingerprint's form; the copy these commands run in has no history",
    "reference": "makes a finished default-scale run the paper's reference in results/: it needs such a run (20-45 "
    "minutes) made from a clean tree",
    "prose": "a target named in a sentence, not run as written (it needs PAPER=, which its full form elsewhere in the "
    "README gives, and that form is classified)",
    "benchmark": "a benchmark at its full size (the default): from a minute (fp8_llm 61 s, gps 93 s) to more than 10 "
    "(popsparse); tests/test_bench_script.py runs every section at the tiny size, and bess's full size and packing's "
    "quick size run here in the slow tests",
    "after the sweep": "reads the learning-rate sweep the command before it makes (21 default-scale runs), and "
    "rewrites papers/unit_scaling/lr_sweep.json from it",
    "minutes": "many minutes of work that its smaller documented form covers in the slow tests",
}


@dataclass(frozen=True)
class Rule:
    """One entry of the classification: which documented commands, their class and why, and how they run."""

    kind: str  # RUN, SLOW or SKIP
    why: str  # RUN and SLOW: what the command does here and its time on the 2-core machine; SKIP: a SKIP_REASONS key
    text: str | None = None
    regex: str | None = None
    run: str | None = None  # the command run instead of the substituted text (the rule's `why` says why)
    setup: str | None = None  # "run:<paper>": a stored run of <paper> at outputs/<paper>/latest
    writes: tuple[str, ...] = ()  # tracked paths (fnmatch patterns) the command documents rewriting
    status: int = 0  # the exit status the README documents
    then: str | None = None  # a documented command run next in the same copy, which must exit 0
    timeout: float = 120.0

    def matches(self, text: str) -> bool:
        if self.text is not None:
            return text == self.text
        return re.fullmatch(self.regex, text, re.DOTALL) is not None

    @property
    def name(self) -> str:
        return self.text if self.text is not None else f"re:{self.regex}"


DEFAULT_RUNS = r"make reproduce PAPER=(bess|fp8_llm|gps|sparq|umup|unit_scaling)"
REDECIDE_OTHERS = r"make redecide PAPER=(bess|gps|popsparse|sparq|umup)"

RULES: tuple[Rule, ...] = (
    # --- RUN: in `make test`, seconds each (times: alone on the 2-core machine, 2026-11-28) ---
    Rule(RUN, "lists the targets (0.1 s)", text="make help"),
    Rule(RUN, "the default goal, `make help` (0.1 s); the README's 'the next `make`' is any target", text="make"),
    Rule(RUN, "prints the composed config and stops (2 s)", text="python scripts/reproduce.py paper=<name> --cfg job"),
    Rule(RUN, "checks every paper's claims against its lock and ledger (5 s)", text="make claims"),
    Rule(
        RUN,
        "rewrites prng's lock, which is current, so it writes what is there (2 s)",
        text='make claims ARGS="lock <name>"',
    ),
    Rule(
        RUN, "says which references are stale and would be re-made, and stops (2 s)", text="make refresh ARGS=--dry-run"
    ),
    Rule(RUN, "prints a paper's claims (2 s each)", regex=r"python scripts/claims\.py show (prng|popsparse)"),
    Rule(
        RUN,
        "your run against the reference; the stored run is the reference itself, so it reproduces: exit 0 (2 s)",
        text="make compare PAPER=<name>",
        setup="run:prng",
    ),
    Rule(
        RUN,
        "re-decides a stored run: its claims.json, report and figures, in the copy's outputs/ (3 s each)",
        regex=r"make redecide PAPER=(prng|<name> \[RUN=<dir>\])",
        setup="run:prng",
    ),
    Rule(
        RUN,
        "writes the papers table into README.md and each paper's README from results/ (5 s)",
        text="make readme",
        writes=("README.md", "papers/*/README.md"),
    ),
    Rule(
        RUN,
        "lists and removes kept work made by other code; after a run, as the README has it (without outputs/ it "
        "exits 2, 'the output root outputs does not exist') (1 s)",
        text="make prune",
        setup="run:prng",
    ),
    Rule(RUN, "ruff format --check and ruff check over the tree (1 s)", text="make lint"),
    Rule(RUN, "ruff format and ruff check --fix: a formatted tree stays as it is (1 s)", text="make format"),
    Rule(
        RUN,
        "reads the paper's figures off the vendored images and writes the same readings again (3 s)",
        text="python -m papers.popsparse.digitise",
    ),
    # --- SLOW: `make test-all` only ---
    Rule(
        SLOW,
        "the README's first two commands as a newcomer runs them: prng at default scale (95 s), then `make compare "
        "PAPER=prng`, which must find that the run reproduces the committed reference (2 min together)",
        text="make reproduce PAPER=<name>",
        then="make compare PAPER=prng",
        timeout=600,
    ),
    Rule(
        SLOW,
        "prng's smoke run through make, seed 1 (15 s)",
        text='make reproduce PAPER=<name> ARGS="scale=smoke seed=1"',
    ),
    Rule(SLOW, "prng's smoke run without make (15 s)", text="python scripts/reproduce.py paper=<name> scale=smoke"),
    Rule(
        SLOW,
        "a three-run sweep of prng; at smoke scale, since three default runs take 5 minutes (25 s)",
        text="python scripts/reproduce.py -m paper=<name> seed=0,1,2",
        run="python scripts/reproduce.py -m paper=prng seed=0,1,2 scale=smoke",
    ),
    Rule(
        SLOW,
        "remakes prng's stored smoke Results, a smoke run (15 s)",
        text="make fixtures PAPER=<name>",
        writes=("tests/fixtures/results/prng/results.json",),
    ),
    Rule(SLOW, "re-decides another paper's stored run (4-8 s each)", regex=REDECIDE_OTHERS, setup="run:<paper>"),
    Rule(SLOW, "the simulated IPU's library-ops table (45-65 s)", text="python -m ipu_model ops"),
    Rule(
        SLOW,
        "profiles a 2048^3 float16 matmul on a simulated Mk2 and writes profile.txt, .json and .png (12 s)",
        text="python -m ipu_model matmul 2048 2048 2048 --out DIR",
    ),
    Rule(
        SLOW, "the packing benchmarks at the quick size (8 s)", text='make bench ARGS="--section packing --size quick"'
    ),
    Rule(
        RUN,
        "a template: run with core.nn.attention's dense decode step at small shapes on 64 tiles, checked against JAX "
        "(9 s)",
        text="python -m ipu_model jax MODULE:FUNCTION --shapes f16[32,128] f16[32,2048,128] ... [--evaluate] "
        "[--out DIR]",
        run="python -m ipu_model jax core.nn.attention:dense_attention --shapes f16[4,64] f16[4,256,64] f16[4,256,64] "
        "--tiles 64 --evaluate --out outputs/readme-commands",
    ),
    Rule(SLOW, "bess's benchmarks at the full size, the default (18 s)", text='make bench ARGS="--section bess"'),
    # --- SKIP, each with its reason ---
    Rule(SKIP, "default scale", regex=DEFAULT_RUNS),
    Rule(SKIP, "default scale", regex=r'make refresh( PAPER="[a-z_ ]+")?'),
    Rule(SKIP, "cluster", regex=r"python scripts/reproduce\.py -m paper=qm1b .* hydra/launcher=slurm .*"),
    Rule(SKIP, "default scale", text="python scripts/reproduce.py paper=qm1b qm1b.stage=all num_shards=1000"),
    Rule(SKIP, "benchmark", regex=r'make bench ARGS="--section (fp8_llm|gps|popsparse|unit_scaling|qm1b --size full)"'),
    Rule(SKIP, "default scale", regex=r"for arm in fp32_regular .*"),
    Rule(SKIP, "after the sweep", text="python -m papers.unit_scaling.sweep sweep/multirun"),
    Rule(SKIP, "minutes", text="make bench"),
    # a paper's step costed on the simulated IPU: the toy's runs in tests/ipu_model/test_steps.py
    Rule(SKIP, "minutes", regex=r"make ipu-step( PAPER=<name>( \[RUN=<dir>\])?)?"),
    Rule(SKIP, "minutes", text="make fixtures"),
    Rule(SKIP, "the test suite", regex=r"make test( JOBS=1)?|make test-all|\.ci/run"),
    Rule(SKIP, "installs", regex=r"make install( LOCK=none| DEVICE=cuda)?|make lock( ARGS=--upgrade)?"),
    Rule(SKIP, "uploads", text="wandb sync <run dir>/wandb/offline-run-*"),
    Rule(SKIP, "missing tool", text="python -m core.random --generator aox --seed 1 | dieharder -g 200 -a"),
    Rule(SKIP, "missing tool", text='make reproduce PAPER=prng ARGS="prng.dieharder=true"'),
    Rule(
        SKIP,
        "your files",
        regex=r"python -m papers\.qm1b\.label( mols\.smi .*)?|make label( ARGS=\"\.\.\.\")?",
    ),
    Rule(SKIP, "git history", text="python scripts/record.py rekey all"),
    Rule(SKIP, "prose", regex=r"make (reproduce|reference|redecide|compare)"),
    Rule(SKIP, "reference", regex=r"make reference PAPER=\S+"),
)


def rules_for(text: str) -> list[Rule]:
    return [rule for rule in RULES if rule.matches(text)]


# ---------------------------------------------------------------------------------------------------------------------
# Substitution and running

PAPER_PLACEHOLDER = re.compile(r"<(name|paper)>")
PLACEHOLDER = re.compile(r"<[^<>\s]*(?: [^<>\s]+)*>|\bDIR\b|\.\.\.")
RUN_PAPER = "prng"


def substitute(text: str) -> str:
    """The command to run for a documented one: the placeholders replaced as the module's docstring lists."""
    out = PAPER_PLACEHOLDER.sub(RUN_PAPER, text)
    out = re.sub(r"\[([^\[\]]*<[^\[\]]*)\]", r"\1", out)  # an optional part holding a placeholder: given
    out = out.replace("<dir>", f"outputs/{RUN_PAPER}/latest")
    out = re.sub(r"\bDIR\b", "outputs/readme-commands", out)
    return out


def unresolved(command: str) -> list[str]:
    """The placeholders a command still holds."""
    return PLACEHOLDER.findall(command)


def copy_tree(dest: Path) -> dict[str, str]:
    """A copy of the working tree at `dest` (tracked files present and untracked ones git does not ignore, with their
    times), .venv linked (`make install` compares the locks' contents, so it takes the linked .venv as installed);
    the copied files' digests, by path."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    paths = sorted({p for p in listed.split("\0") if p and (REPO_ROOT / p).is_file()})
    for path in paths:
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / path, target, follow_symlinks=False)
    (dest / ".venv").symlink_to(REPO_ROOT / ".venv")
    return {path: digest(dest / path) for path in paths}


def digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    return hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def store_run(root: Path, paper: str) -> None:
    """A stored run of `paper` at outputs/<paper>/latest: its committed reference, or its stored smoke Results."""
    run = root / "outputs" / paper / "stored"
    reference = root / "results" / paper
    if (reference / "results.json").is_file():
        shutil.copytree(reference, run)
    else:
        run.mkdir(parents=True)
        shutil.copy2(root / "tests" / "fixtures" / "results" / paper / "results.json", run / "results.json")
    (run.parent / "latest").symlink_to("stored")


def changed_files(root: Path, before: dict[str, str], writes: tuple[str, ...] = ()) -> list[str]:
    """The copied files whose contents differ from `before` (or are gone), except those matching `writes`."""
    return sorted(
        path
        for path, old in before.items()
        if digest(root / path) != old and not any(fnmatch.fnmatch(path, w) for w in writes)
    )


def environment(root: Path) -> dict[str, str]:
    """The environment a command runs in: the venv's python first on PATH, the copy's code imported, no make flags
    from a surrounding `make test`."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    env["PATH"] = f"{REPO_ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(root)
    env.pop("VIRTUAL_ENV", None)
    return env


def shell(command: str, root: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command], cwd=root, env=environment(root), capture_output=True, text=True, timeout=timeout
    )


def tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# ---------------------------------------------------------------------------------------------------------------------
# The tests


def test_commands_are_found():
    """The extraction finds what the READMEs hold: a fenced block's continuation, a compound, a comment dropped, and
    inline commands (independent expectations, written here from the README text)."""
    texts = {o.text for o in OCCURRENCES}
    assert "make reproduce PAPER=<name>" in texts  # a block line with its comment dropped
    assert "make compare PAPER=<name>" in texts
    assert "make help" in texts  # prose
    qm1b = [o.text for o in OCCURRENCES if o.readme == "papers/qm1b/README.md" and o.where == "block"]
    assert qm1b[0].startswith("python scripts/reproduce.py -m paper=qm1b qm1b.stage=generate hydra/launcher=slurm")
    assert qm1b[0].endswith("'shard=range(0,1000)' hydra.launcher.partition=<yours>")  # the `\` continuation joined
    sweep = [o.text for o in OCCURRENCES if o.readme == "papers/unit_scaling/README.md" and o.where == "block"]
    assert sweep[0].startswith("for arm in") and sweep[0].splitlines()[-1] == "done"  # the loop is one command


@pytest.mark.parametrize("readme", READMES)
def test_code_spans_are_closed(readme):
    """Every paragraph's backticks pair up: one left open shifts every later code span of the paragraph, and a
    command in it is then read as prose (and prose as a command)."""
    text = (REPO_ROOT / readme).read_text()
    odd = [f"{readme}:{line}: {part.strip()[:80]!r}..." for line, part in paragraphs(text) if part.count("`") % 2]
    assert not odd, "a code span left open (an odd number of backticks) in:\n" + "\n".join(odd)


def test_block_splitting():
    """block_commands on a hand-written block: prompts, output, comments, continuations and a compound."""
    body = (
        "$ make help   # the targets\n"
        "usage: make <target>\n"
        "$ python a.py x=1 \\\n"
        "    y='#not a comment'\n"
        "$ for i in 1 2; do\n"
        "$   echo $i\n"
        "$ done\n"
    )
    assert block_commands(body, 10, console=True) == [
        (10, "make help"),
        (12, "python a.py x=1 y='#not a comment'"),
        (14, "for i in 1 2; do\necho $i\ndone"),
    ]
    assert block_commands("# only a comment\n\nmake test\n", 1, console=False) == [(3, "make test")]


def test_substitution():
    assert substitute("make redecide PAPER=<name> [RUN=<dir>]") == "make redecide PAPER=prng RUN=outputs/prng/latest"
    assert (
        substitute("python -m ipu_model matmul 2 2 2 --out DIR")
        == "python -m ipu_model matmul 2 2 2 --out outputs/readme-commands"
    )
    assert unresolved(substitute("wandb sync <run dir>/wandb/offline-run-*")) == ["<run dir>"]
    assert unresolved(substitute('make label ARGS="..."')) == ["..."]
    assert unresolved(substitute('make claims ARGS="lock <name>"')) == []


def test_a_changed_file_is_found(tmp_path):
    """The copy holds the working tree's files as they are, and a file a command rewrites is found unless the rule
    declares it."""
    before = copy_tree(tmp_path)
    assert (tmp_path / "README.md").read_bytes() == (REPO_ROOT / "README.md").read_bytes()
    assert (tmp_path / ".venv" / "bin" / "python").exists()
    assert changed_files(tmp_path, before) == []
    (tmp_path / "README.md").write_text("rewritten\n")
    (tmp_path / "Makefile").unlink()
    assert changed_files(tmp_path, before) == ["Makefile", "README.md"]
    assert changed_files(tmp_path, before, writes=("README.md",)) == ["Makefile"]


def test_every_documented_command_is_classified():
    """Each documented command is named by exactly one rule; each rule names at least one command."""
    problems = []
    for o in OCCURRENCES:
        found = rules_for(o.text)
        if not found:
            problems.append(f"{o}: no rule of RULES classifies it; add one (RUN, SLOW or SKIP with a reason)")
        elif len(found) > 1:
            problems.append(f"{o}: named by {len(found)} rules: " + "; ".join(r.name for r in found))
    for rule in RULES:
        if not any(rule.matches(o.text) for o in OCCURRENCES):
            problems.append(f"rule {rule.name!r} ({rule.kind}) names no documented command: remove or correct it")
        if rule.kind == SKIP and rule.why not in SKIP_REASONS:
            problems.append(f"rule {rule.name!r}: skip reason {rule.why!r} is not one of {sorted(SKIP_REASONS)}")
        if rule.kind not in (RUN, SLOW, SKIP):
            problems.append(f"rule {rule.name!r}: class {rule.kind!r}, allowed: run, slow, skip")
    unused = set(SKIP_REASONS) - {rule.why for rule in RULES if rule.kind == SKIP}
    if unused:
        problems.append(f"skip reasons no rule gives: {sorted(unused)}")
    assert not problems, "\n".join(problems)


def distinct_commands() -> list[tuple[str, list[Occurrence], Rule | None]]:
    """Each distinct documented command with where it is documented and its rule (None where not exactly one)."""
    by_text: dict[str, list[Occurrence]] = {}
    for o in OCCURRENCES:
        by_text.setdefault(o.text, []).append(o)
    out = []
    for text, where in by_text.items():
        found = rules_for(text)
        out.append((text, where, found[0] if len(found) == 1 else None))
    return out


def counts() -> dict[str, object]:
    """How many documented commands each class holds (occurrences and distinct commands), skips by reason."""
    distinct = distinct_commands()
    occurrence_kinds = Counter((rule.kind if rule else "unclassified") for _, where, rule in distinct for _ in where)
    distinct_kinds = Counter((rule.kind if rule else "unclassified") for _, _, rule in distinct)
    reasons = Counter(rule.why for _, _, rule in distinct if rule and rule.kind == SKIP)
    return {
        "occurrences": len(OCCURRENCES),
        "distinct": len(distinct),
        "occurrences by class": dict(occurrence_kinds),
        "distinct by class": dict(distinct_kinds),
        "distinct skipped by reason": dict(reasons),
    }


def _params():
    params = []
    for text, where, rule in distinct_commands():
        marks = [pytest.mark.slow] if rule is not None and rule.kind == SLOW else []
        params.append(pytest.param(text, where, rule, marks=marks, id=text.replace("\n", "; ")))
    return params


@pytest.mark.parametrize(("text", "where", "rule"), _params())
def test_documented_command_runs(text, where, rule, tmp_path):
    places = ", ".join(f"{o.readme}:{o.line}" for o in where)
    if rule is None:
        pytest.fail(f"`{text}` ({places}) is not classified by exactly one rule of RULES")
    if rule.kind == SKIP:
        pytest.skip(f"`{text}` ({places}): {SKIP_REASONS[rule.why]}")
    command = rule.run if rule.run is not None else substitute(text)
    left = unresolved(command)
    assert not left, (
        f"`{text}` ({places}) still holds {left} after substitution (`{command}`): add a substitution to "
        "`substitute` or give the rule a `run` command"
    )
    root = tmp_path / "repo"
    root.mkdir()
    before = copy_tree(root)
    if rule.setup:
        paper = rule.setup.removeprefix("run:")
        if paper == "<paper>":
            paper = re.search(r"PAPER=(\w+)", text).group(1)
        store_run(root, paper)
    t0 = time.perf_counter()
    done = shell(command, root, rule.timeout)
    seconds = time.perf_counter() - t0
    assert done.returncode == rule.status, (
        f"`{command}` ({places}, documented as `{text}`) exited {done.returncode}, expected {rule.status}, "
        f"after {seconds:.1f} s:\n{tail(done.stdout)}\n{tail(done.stderr)}"
    )
    if rule.then:
        after = shell(rule.then, root, rule.timeout)
        assert after.returncode == 0, (
            f"after `{command}`, `{rule.then}` exited {after.returncode}:\n{tail(after.stdout)}\n{tail(after.stderr)}"
        )
    changed = changed_files(root, before, rule.writes)
    assert not changed, f"`{command}` ({places}) changed files it was given: {changed}"


if __name__ == "__main__":
    for key, value in counts().items():
        print(f"{key}: {value}")
    for kind in (RUN, SLOW, SKIP):
        print(f"\n{kind}:")
        for text, where, rule in distinct_commands():
            if rule is not None and rule.kind == kind:
                places = ", ".join(f"{o.readme}:{o.line}" for o in where)
                note = rule.why if kind == SKIP else (f"runs `{rule.run}`" if rule.run else "")
                print(f"  `{text}`  ({places})" + (f"  [{note}]" if note else ""))
