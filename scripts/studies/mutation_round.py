"""A round of one-line mutations of the code that changed in the last release, each run against the tests nearest it.

For each file of :data:`TARGETS` the script lists every one-line mutation of its code (never of a
docstring, a comment or a message's text) by these operators:

- comparisons: ``==``/``!=``, ``<``/``<=``, ``>``/``>=``, ``in``/``not in``, ``is``/``is not``;
- ``and``/``or``; ``+``/``-`` (and ``+=``/``-=``); ``any``/``all`` (``np.any``/``np.all`` too);
- ``True``/``False``; a numeric constant 0 made 1 and 1 made 0; a ``not`` dropped;

draws ``--per-file`` of them with ``--seed``, applies each to the file, runs the file's tests
(``pytest -x``, a per-mutation timeout; a hung run counts as caught) and restores the file byte for
byte (also on Ctrl-C). A mutation is *caught* when the tests fail with it in place. Mutations listed
in :data:`EQUIVALENT` (no observable change, each with its reason) are run but left out of the
share. Run from the repository root on a clean work tree:

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/studies/mutation_round.py             # 8 files x 9 (~15 min)
    PYTHONPATH=. python scripts/studies/mutation_round.py --list                        # the draw, not run
    PYTHONPATH=. python scripts/studies/mutation_round.py --file timeout.py --per-file 0  # every mutation of a file

Prints one line per mutation, then ``caught N of M (share)``; exits 1 below ``--target`` (0.9).
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import random
import signal
import subprocess
import sys
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# file -> the tests nearest it (pytest arguments), a targeted subset
TARGETS: dict[str, list[str]] = {
    "shapleig/gp/kernels/graded.py": ["tests/gp/test_graded_spec.py", "tests/gp/test_integrate.py"],
    "shapleig/gp/integrate.py": ["tests/gp/test_integrate.py"],
    "shapleig/runs/in_flight.py": ["tests/runs/test_in_flight.py", "tests/design/test_async_loop.py", "-k", "not dask"],
    "shapleig/design/async_loop.py": ["tests/design/test_async_loop.py", "-k", "not dask"],
    "shapleig/design/acquisition.py": ["tests/design/test_acquisition.py", "tests/design/test_acquisition_docs.py"],
    "shapleig/explanation/model_identity.py": ["tests/explanation/test_explain_store_identity.py"],
    "shapleig/explanation/explain_rows.py": ["tests/explanation/test_explain_rows.py",
                                             "tests/explanation/test_explain_rows_cli.py"],
    "shapleig/runs/timeout.py": ["tests/runs/test_timeout.py"],
}

# (file, the mutated line as it reads) -> why no test can see it
_FLAGS = "the connection is used in one direction only; the flag only allows the other, which never comes"
_POSIX = "differs only where os.name is not 'posix' (the tests run on Linux)"
EQUIVALENT: dict[tuple[str, str], str] = {
    ("shapleig/explanation/model_identity.py",
     'return {f"{PREFIX}string": show_value(booster.model_to_string(num_iteration=-0), "model string", opaque),'):
        "LightGBM's model_to_string saves every iteration for any num_iteration <= 0 (documented; checked on "
        "lightgbm 4.7 with early stopping): -1 and -0 are the same call",
    ("shapleig/explanation/model_identity.py", "for key, value in sorted(state.items(), key=lambda kv: str(kv[1])):"):
        "the identity is a mapping digested with sorted keys (json.dumps(sort_keys=True)): the order in which "
        "the fitted attributes are read does not reach it",
    ("shapleig/gp/integrate.py", "w[~np.isfinite(w)] = 1.0"):
        "log p is finite or -inf (_log_target) and log q finite, so every weight exp(log w - max) is finite",
    ("shapleig/runs/in_flight.py",
     'if r.status == "ok" and (fingerprint is not None or r.fingerprint == fingerprint)]'):
        "an EvaluationStore writes every record under the one fingerprint bind returns (accept_game_change "
        "included), which is the game's: the filter keeps every record either way",
    ("shapleig/design/async_loop.py", "self._flight = InFlight(loop.game, loop.options.batch_size + loop.n_players + 0)"):
        "at most max(p + 1, batch_size) coalitions are ever in flight (early picks only below batch_size; the "
        "design overlapped only when batch_size >= 2), which batch_size + p slots already hold",
    ("shapleig/design/async_loop.py", "self._flight = InFlight(loop.game, loop.options.batch_size + loop.n_players - 1)"):
        "at most max(p + 1, batch_size) coalitions are ever in flight, which batch_size + p - 1 slots hold when "
        "the design is overlapped (batch_size >= 2)",
    ("shapleig/design/async_loop.py", "self._fitter.shutdown(wait=False, cancel_futures=False)"):
        "the fitter holds one refit at a time (the next is launched after the last was adopted, waiting for "
        "it); one still queued at close would only run unused in the background",
    ("shapleig/design/async_loop.py", "hyper = initial_hyperparameters(opts.kernels[1], loop.n_players, noise)"):
        "every built-in kernel starts from the same prior (size variance 0, g = 1, ARD lengthscales equal), "
        "so the first and second kernels' initial candidate states are the same",
    ("shapleig/design/acquisition.py", "counts = np.bincount(sizes[avail], minlength=int(sizes.max(initial=1)) + 1)"):
        "minlength only pads the counts with zeros; every size looked up is an available one, counted",
    ("shapleig/runs/timeout.py",
     'self._process = ctx.Process(target=target, args=args, daemon=False, name="shapleig-evaluation-worker")'):
        "on Linux only: a worker is started from the launcher thread with the parent-death signal, so it dies "
        "when that thread ends at interpreter exit, before multiprocessing would join a non-daemon child (the "
        "daemon flag matters where there is no prctl)",
    ("shapleig/runs/timeout.py", "ctypes.CDLL(None, use_errno=False).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG"):
        "errno is never read after the prctl call",
    ("shapleig/runs/timeout.py", "os._exit(1)"):
        "the exit status of a worker whose parent has already died is read by no one",
    ("shapleig/runs/timeout.py", "return cloudpickle.dumps((distributions and {}, game), protocol=pickle.HIGHEST_PROTOCOL)"):
        "the worker then scans the installed distributions itself: the same environment, the same identity "
        "(only a second scan's time)",
    ("shapleig/runs/timeout.py", "_load_and_serve(Connection(rfd, writable=True), Connection(wfd, readable=False), parent)"):
        _FLAGS,
    ("shapleig/runs/timeout.py", "_load_and_serve(Connection(rfd, writable=False), Connection(wfd, readable=True), parent)"):
        _FLAGS,
    ("shapleig/runs/timeout.py", "self._out, self._in = Connection(send, readable=True), Connection(recv, writable=False)"):
        _FLAGS,
    ("shapleig/runs/timeout.py", "self._out, self._in = Connection(send, readable=False), Connection(recv, writable=True)"):
        _FLAGS,
    ("shapleig/runs/timeout.py", "child_in, self._out = ctx.Pipe(duplex=True)"): _FLAGS,
    ("shapleig/runs/timeout.py", "self._in, child_out = ctx.Pipe(duplex=True)"): _FLAGS,
    ("shapleig/runs/timeout.py", 'return "subprocess" if os.name == "posix" or sys.executable else "spawn"'): _POSIX,
    ("shapleig/runs/timeout.py", 'if method != "subprocess" and os.name != "posix":'): _POSIX,
}

_COMPARE = {ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"),
            ast.Gt: (">", ">="), ast.GtE: (">=", ">"), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
            ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is")}
_SWAP = {"and": "or", "or": "and", "+": "-", "-": "+", "+=": "-=", "-=": "+=", "any": "all", "all": "any",
         "True": "False", "False": "True"}


@dataclass(frozen=True)
class Mutation:
    """One textual change on one line: ``line`` (1-based) columns ``start:end`` become ``new``."""

    path: str
    line: int
    start: int
    end: int
    new: str

    def apply(self, lines: list[str]) -> list[str]:
        text = lines[self.line - 1]
        return [*lines[: self.line - 1], text[: self.start] + self.new + text[self.end:], *lines[self.line:]]

    def describe(self, lines: list[str]) -> str:
        old = lines[self.line - 1][self.start: self.end]
        return f"{old!r} -> {self.new!r}" if self.new else f"{old!r} dropped"

    def key(self, lines: list[str]) -> tuple[str, str]:
        """``(file, the mutated line as it reads)``: the key of :data:`EQUIVALENT`."""
        return self.path, self.apply(lines)[self.line - 1].strip()


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    return [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in skip]


def _char_pos(lines: list[str], line: int, byte_col: int) -> tuple[int, int]:
    """An ast position (1-based line, UTF-8 byte column) as (line, character column)."""
    return line, len(lines[line - 1].encode()[:byte_col].decode(errors="ignore"))


def _between(tokens: list[tokenize.TokenInfo], lo: tuple[int, int], hi: tuple[int, int],
             words: tuple[str, ...]) -> list[tokenize.TokenInfo]:
    """The tokens strictly between two positions whose texts spell ``words`` in a row (the first of each run)."""
    inside = [t for t in tokens if lo <= t.start and t.end <= hi]
    n = len(words)
    return [inside[i] for i in range(len(inside) - n + 1) if tuple(t.string for t in inside[i: i + n]) == words]


def _operator_mutations(path: str, node: ast.AST, lines: list[str], tokens: list[tokenize.TokenInfo]):
    """Mutations of the operators between a node's operands (comparisons, and/or, +/-)."""
    def span(a: ast.AST, b: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
        return _char_pos(lines, a.end_lineno, a.end_col_offset), _char_pos(lines, b.lineno, b.col_offset)

    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        pairs = [(operands[i], operands[i + 1], *_COMPARE[type(op)]) for i, op in enumerate(node.ops)]
    elif isinstance(node, ast.BoolOp):
        word = "and" if isinstance(node.op, ast.And) else "or"
        pairs = [(a, b, word, _SWAP[word]) for a, b in zip(node.values, node.values[1:])]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        word = "+" if isinstance(node.op, ast.Add) else "-"
        pairs = [(node.left, node.right, word, _SWAP[word])]
    else:
        return
    for a, b, old, new in pairs:
        lo, hi = span(a, b)
        found = _between(tokens, lo, hi, tuple(old.split()))
        if len(found) == 1:
            first = found[0]
            last_end = first.end if " " not in old else _between(tokens, first.end, hi, (old.split()[-1],))[0].end
            if first.start[0] == last_end[0]:
                yield Mutation(path, first.start[0], first.start[1], last_end[1], new)


def _token_at(tokens: list[tokenize.TokenInfo], pos: tuple[int, int]) -> tokenize.TokenInfo | None:
    return next((t for t in tokens if t.start == pos), None)


def _other_mutations(path: str, node: ast.AST, lines: list[str], tokens: list[tokenize.TokenInfo]):
    """Mutations at a single token: +=/-=, any/all, True/False, 0/1, a dropped ``not``."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
        word = "+=" if isinstance(node.op, ast.Add) else "-="
        found = _between(tokens, _char_pos(lines, node.target.end_lineno, node.target.end_col_offset),
                         _char_pos(lines, node.value.lineno, node.value.col_offset), (word,))
        if len(found) == 1:
            yield Mutation(path, found[0].start[0], found[0].start[1], found[0].end[1], _SWAP[word])
    elif isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("any", "all"):
            end = _char_pos(lines, func.end_lineno, func.end_col_offset)
            yield Mutation(path, end[0], end[1] - 3, end[1], _SWAP[name])
    elif isinstance(node, ast.Constant) and (node.value is True or node.value is False):
        tok = _token_at(tokens, _char_pos(lines, node.lineno, node.col_offset))
        if tok is not None and tok.string in ("True", "False"):
            yield Mutation(path, tok.start[0], tok.start[1], tok.end[1], _SWAP[tok.string])
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value in (0, 1):
        tok = _token_at(tokens, _char_pos(lines, node.lineno, node.col_offset))
        if tok is not None and tok.type == tokenize.NUMBER:
            new = ("1" if node.value == 0 else "0") if isinstance(node.value, int) else \
                ("1.0" if node.value == 0 else "0.0")
            yield Mutation(path, tok.start[0], tok.start[1], tok.end[1], new)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        start = _char_pos(lines, node.lineno, node.col_offset)
        i = next((i for i, t in enumerate(tokens) if t.start == start and t.string == "not"), None)
        if i is not None and i + 1 < len(tokens) and tokens[i + 1].start[0] == start[0]:
            yield Mutation(path, start[0], start[1], tokens[i + 1].start[1], "")  # "not " and its spaces


def _docstring_lines(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            out.update(range(body[0].lineno, body[0].end_lineno + 1))
    return out


def mutations(path: str) -> list[Mutation]:
    """Every mutation of ``path`` (relative to the repository) by the module docstring's operators, in file order."""
    source = (REPO / path).read_text()
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    tokens = _tokens(source)
    docs = _docstring_lines(tree)
    found: set[Mutation] = set()
    for node in ast.walk(tree):
        for m in (*_operator_mutations(path, node, lines, tokens), *_other_mutations(path, node, lines, tokens)):
            if m.line not in docs:
                found.add(m)
    return sorted(found, key=lambda m: (m.line, m.start, m.new))


def _run_tests(tests: list[str], timeout: float) -> tuple[str, str]:
    """(outcome, pytest's last line): outcome "failed", "passed", "hung" or "error <code>"."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the test run and any worker it started
        proc.communicate()
        return "hung", f"killed after {timeout:.0f} s"
    except BaseException:  # Ctrl-C: the run is in its own session, so it is ended here
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    last = (out.strip().splitlines() or [""])[-1]
    outcome = {0: "passed", 1: "failed"}.get(proc.returncode, f"error {proc.returncode}")
    return outcome, last


def draw(per_file: int, seed: int, files: list[str]) -> list[Mutation]:
    """``per_file`` mutations of each file drawn with ``seed`` (every one when ``per_file`` is 0), in file order."""
    chosen: list[Mutation] = []
    for path in files:
        every = mutations(path)
        rng = random.Random(f"{seed}:{path}")
        picked = every if per_file <= 0 or per_file >= len(every) else rng.sample(every, per_file)
        chosen += sorted(picked, key=lambda m: (m.line, m.start))
    return chosen


def run(chosen: list[Mutation], timeout: float, target: float) -> int:
    """Apply each mutation, run its file's tests, restore; print the outcomes and the share caught."""
    caught = counted = 0
    baseline_done: set[str] = set()
    for m in chosen:
        tests = TARGETS[m.path]
        path = REPO / m.path
        if m.path not in baseline_done:  # the tests must pass on the unmutated file
            outcome, last = _run_tests(tests, timeout)
            if outcome != "passed":
                print(f"the tests of {m.path} do not pass unmutated ({outcome}: {last}); stopping")
                return 2
            baseline_done.add(m.path)
        original = path.read_bytes()
        lines = original.decode().splitlines(keepends=True)
        before = lines[m.line - 1].strip()
        after = m.apply(lines)[m.line - 1].strip()
        start = time.perf_counter()
        try:
            path.write_text("".join(m.apply(lines)))
            outcome, last = _run_tests(tests, timeout)
        finally:
            path.write_bytes(original)
        reason = EQUIVALENT.get(m.key(lines))
        hit = outcome != "passed"
        if reason is None:
            counted += 1
            caught += hit
        label = "EQUIV " if reason is not None else ("CAUGHT" if hit else "MISSED")
        print(f"{label} {m.path}:{m.line} {m.describe(lines)} ({time.perf_counter() - start:.0f} s, {outcome}: {last})"
              f"\n         {before}\n      -> {after}" + (f"\n         equivalent: {reason}" if reason else ""),
              flush=True)
    share = caught / counted if counted else 1.0
    excluded = len(chosen) - counted
    print(f"caught {caught} of {counted} ({100 * share:.0f}%)"
          + (f"; {excluded} equivalent mutation(s) run but left out" if excluded else ""))
    return 0 if share >= target else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed")
    parser.add_argument("--per-file", type=int, default=9, help="mutations drawn per file (0: every one)")
    parser.add_argument("--file", action="append", default=None,
                        help="only the files whose path contains this text (repeatable)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a mutation's test run is killed")
    parser.add_argument("--target", type=float, default=0.9, help="exit 1 when the share caught is below this")
    parser.add_argument("--list", action="store_true", help="print the drawn mutations without running them")
    args = parser.parse_args()
    files = [f for f in TARGETS if not args.file or any(text in f for text in args.file)]
    chosen = draw(args.per_file, args.seed, files)
    if args.list:
        for m in chosen:
            lines = (REPO / m.path).read_text().splitlines(keepends=True)
            print(f"{m.path}:{m.line} {m.describe(lines)}: {m.apply(lines)[m.line - 1].strip()}")
        print(f"{len(chosen)} mutations")
        return 0
    return run(chosen, args.timeout, args.target)


if __name__ == "__main__":
    sys.exit(main())
