"""The rules of a comparison tuned and measured in other processes while this one works.

The rules and their measures do not depend on the learned policy, so on a machine with a
spare core they are done while the learner trains or is measured. A system whose families
form independent chains (``drl_ac.rules.chains``: a cell's thresholds and guards, redundancy's
fixed d and own-server threshold) gets a process per chain. Once a chain is tuned, each of its
rows is measured by whichever process takes it first (``Claims``): the chain's own, or this one
once its own work is done (it helps every chain). Each chain tuned and measured its own rows
before, and the quick evaluate of redundancy_ps at load 0.9 then waited 190 s for one chain's
two long rows (d = 1 and the load threshold, 128,000 decisions per instance each) while this
process and the other chain were idle. The same seed gives the same rows whichever process
measures them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from drl_ac import rules
from drl_ac.parallel import Worker
from drl_ac.rules.tuning import TuningResult
from drl_ac.study.compare import measure_row, measure_rules, rule_budget, table_cell, tune_rules
from envs import NetworkSpec
from envs.compiled import sharing_cores

POLL = 0.05  # seconds between looks at the other processes while none has news and no row is free


class RuleRows(NamedTuple):
    """The rules of a system tuned (``tune_rules``) and measured on the evaluation seed
    (``measure_rules``): what ``compare`` needs besides the learned policy."""

    tuned: dict[str, TuningResult]
    rows: dict[str, dict]


class Claims:
    """Which rows are taken: row ``index`` of chain ``chain`` is measured by the first process
    to create its file in a folder they share (an exclusive create is an atomic
    test-and-set across processes, on every platform)."""

    def __init__(self, folder: str):
        self.folder = folder

    def take(self, chain: int, index: int) -> bool:
        try:
            os.close(os.open(os.path.join(self.folder, f"{chain}-{index}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def measure_free(self, chain: int, tuned: dict[str, TuningResult], spec: NetworkSpec, seed: int, budget: str,
                     into: Callable[[str, dict], None]) -> bool:
        """Measure the first row of ``chain`` (rules ``tuned``) that no process has taken, give
        it to ``into``; False when none is left."""
        for index, (name, result) in enumerate(tuned.items()):
            if self.take(chain, index):
                into(name, measure_row(result, spec, seed, budget))
                return True
        return False


class BackgroundRules:
    """``tune_rules`` (unless ``tuned`` is given) and ``measure_rules`` in second processes,
    started now (see the module's text). ``tuned`` returns the rules as soon as they are tuned
    (a control policy's guard needs them); ``result`` the rules and their rows, merged in the
    chains' order, this process measuring the rows no other has taken. If a second process
    cannot run (a script read from standard input cannot be re-imported by it), the work is
    done here. ``cancel`` stops them (Ctrl-C). ``show``: the processes print their progress
    lines to stderr (``drl_ac.cli.progress_printer``); ``tuning``: options of the system's
    tuner replacing the budget's, as ``tune_rules``' (``chain``: that chain only)."""

    def __init__(self, spec: NetworkSpec, seed: int = 0, budget: str = "quick",
                 tuned: dict[str, TuningResult] | None = None, show: bool = False, **tuning: Any):
        rule_budget(spec, budget)  # an unknown budget fails here, not in the second process
        self.spec, self.seed, self.budget, self.given, self.tuning = spec, seed, budget, tuned, tuning
        self.started = time.perf_counter()
        count = 1 if tuned is not None or "chain" in tuning else rules.chains(spec)
        chains = [tuning.get("chain")] if count == 1 else range(count)
        options = {k: v for k, v in tuning.items() if k != "chain"}
        self.claims = Claims(tempfile.mkdtemp(prefix="drl_ac-rows-"))
        self.workers = [Worker(_rules_into, spec, seed, budget, tuned, chain, i, self.claims.folder, show, options,
                               len(chains) + 1, stream=True) for i, chain in enumerate(chains)]
        self._tuned: list[dict[str, TuningResult] | None] = [None] * len(self.workers)  # per process
        self._rows: list[dict[str, dict]] = [{} for _ in self.workers]
        self._done = [False] * len(self.workers)
        self._merged: dict[str, TuningResult] | None = None
        self._here = False  # a process failed: everything is done in this one

    def tuned(self, progress: Callable[[str], None] = lambda s: None) -> dict[str, TuningResult]:
        if self._merged is None:
            try:
                for i in range(len(self.workers)):
                    while self._tuned[i] is None:
                        self._receive(i)
                self._merged = {name: r for chain in self._tuned for name, r in chain.items()}
            except (EOFError, OSError):
                progress("a second process could not tune the rules: tuning them here")
                self.cancel()
                self._here = True
                self._merged = tune_rules(self.spec, self.seed, self.budget, progress, **self.tuning) \
                    if self.given is None else self.given
        return self._merged

    def result(self, progress: Callable[[str], None] = lambda s: None) -> RuleRows:
        tuned = self.tuned(progress)
        try:
            if not self._here:
                self._measure_with_the_workers()
        except (EOFError, OSError):
            progress("a second process could not measure the rules: measuring them here")
            self._here = True
        finally:
            self.cancel()
        if self._here:
            return RuleRows(tuned, measure_rules(tuned, self.spec, self.seed, self.budget, progress))
        rows = {name: self._rows[i][name] for i, chain in enumerate(self._tuned) for name in chain}
        what = "measured" if self.given is not None else "tuned and measured"
        progress(f"{what} the rules of {self.spec.name} ({self.budget}) in {len(self.workers)} other process(es) "
                 f"and this one ({time.perf_counter() - self.started:.0f} s since their start)")
        for name, m in rows.items():
            progress(f"{name}: {table_cell(m, self.spec)}")
        return RuleRows(tuned, rows)

    def _measure_with_the_workers(self) -> None:
        """Take in what the processes send, and measure here each row none has taken, until
        every process is done (each then has measured every row it took)."""
        with sharing_cores(len(self.workers) + 1):  # this one's share while the others run too
            while not all(self._done):
                news = False
                for i, worker in enumerate(self.workers):
                    while not self._done[i] and worker.ready():
                        self._receive(i)
                        news = True
                free = any(not self._done[i] and self.claims.measure_free(
                    i, self._tuned[i], self.spec, self.seed, self.budget, self._rows[i].__setitem__)
                    for i in range(len(self.workers)))
                if not news and not free:
                    time.sleep(POLL)

    def _receive(self, i: int) -> None:
        """The next message of process ``i``: its rules, then (name, row) per row it measured,
        then None when it has no more."""
        item = self.workers[i].recv()
        if self._tuned[i] is None:
            self._tuned[i] = item
        elif item is None:
            self._done[i] = True
        else:
            self._rows[i][item[0]] = item[1]

    def cancel(self) -> None:
        for worker in self.workers:
            worker.cancel()
        shutil.rmtree(self.claims.folder, ignore_errors=True)


def _rules_into(send: Callable[[Any], None], spec: NetworkSpec, seed: int, budget: str, tuned: dict | None,
                chain: int | None, index: int, folder: str, show: bool, tuning: dict[str, Any], processes: int) -> None:
    """A second process of ``BackgroundRules`` (a ``Worker``, one of ``processes`` with the
    caller, each on its share of the cores): the rules (of one chain), then each row of that
    chain no other process has taken, then None."""
    from drl_ac.cli import progress_printer

    say = progress_printer(quiet=not show)
    with sharing_cores(processes):
        if tuned is None:
            tuned = tune_rules(spec, seed, budget, say, **tuning, **({} if chain is None else {"chain": chain}))
        send(tuned)
        claims = Claims(folder)
        while claims.measure_free(index, tuned, spec, seed, budget, lambda name, row: send((name, row))):
            pass
    send(None)
