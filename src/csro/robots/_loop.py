"""The Act–Observe–Rewrite loop (Kumar, arXiv 2603.04466), round by round.

Round 0 makes the first controller (a file from the configuration, or the LLM's proposal
from the task alone). Every later round, in steps:

1. the parent is the best controller so far (by success rate over the evaluation episodes,
   then mean progress, then the later round) — so a rewrite that breaks or regresses is
   rolled back to the last good controller, and the best is what is kept;
2. the LLM gets the task, the API, the parent's source, its episodes' structured outcomes
   and the episodic memory (one line per earlier attempt: its success, how its episodes
   ended, where they stalled, its diagnosis or why it was rejected), and is asked for the
   diagnosis first, then the whole new class (``_prompt``);
3. the reply's class is compile-and-smoke checked: ``smoke_steps`` steps of a real episode in
   the sandbox; a failure is sent back with its error up to ``max_repairs`` times;
4. a controller that passes is evaluated over ``episodes`` seeded episodes (the same seeds
   for every controller), each episode stored with its key frames as soon as it ends;
5. the round is marked done in the store.

The state of the loop is recomputed from the store at every round (controllers, episodes,
marked rounds), so a run killed anywhere resumes where it stopped: stored LLM calls are
replayed by key and stored episodes are not run again. Deviation from the paper: a fixed
number of rounds rather than stopping at 100%.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Callable, Sequence

import numpy as np

from csro import events
from csro.drafting import Draft, Drafting, write
from csro.errors import ConfigError
from csro.llm import LLMClient, LLMRequest, LLMSession
from csro.seeding import derive_seed

from . import _prompt
from ._config import AorConfig
from ._controller import ControllerProcess
from ._episode import Episode, evaluate, run_episode, summary
from ._sim import SimHost, Task
from ._store import AorStore, ControllerRecord, Frame, sha256

OnEvent = Callable[[int, str, dict], None]


@dataclasses.dataclass(frozen=True)
class Evaluated:
    """A valid controller and its evaluation outcomes."""

    record: ControllerRecord
    outcomes: list[dict]

    @property
    def success_rate(self) -> float:
        return sum(o["success"] for o in self.outcomes) / len(self.outcomes)

    @property
    def rank(self) -> tuple:
        return (self.success_rate, float(np.mean([o["progress"] for o in self.outcomes])), self.record.round)


class ActObserveRewrite:
    """One AOR run over ``store``; ``run()`` continues it to the end and returns the final result."""

    def __init__(self, config: AorConfig, task: Task, store: AorStore, llm: LLMClient, host: SimHost,
                 on_event: OnEvent | None = None):
        self.config, self.task, self.store, self.llm, self.host = config, task, store, llm, host
        self.on_event = on_event or (lambda r, kind, data: None)
        self.seeds = [config.seed + i for i in range(config.episodes)]
        self.obs_keys = sorted(host.reset(config.seed))

    # -- state, from the store --------------------------------------------------------------
    def evaluated(self, before: int | None = None) -> list[Evaluated]:
        """The evaluated controllers (of the rounds before ``before``, if given)."""
        out = []
        for record in self.store.controllers():
            if before is not None and record.round >= before:
                continue
            episodes = self.store.episodes(record.id) if record.valid else {}
            if len(episodes) == len(self.seeds):
                out.append(Evaluated(record, [episodes[i] for i in range(len(self.seeds))]))
        return out

    def best(self, before: int | None = None) -> Evaluated | None:
        done = self.evaluated(before)
        return max(done, key=lambda e: e.rank) if done else None

    def memory(self, before: int) -> list[str]:
        """One line per attempt of the rounds before ``before`` (the episodic memory of the prompt)."""
        scores = {e.record.id: e for e in self.evaluated(before)}
        lines = []
        for record in self.store.controllers():
            if record.round >= before:
                continue
            if not record.valid:
                lines.append(f"- {record.id} (round {record.round}): REJECTED by the check: {(record.error or '')[:300]}")
                continue
            e = scores.get(record.id)
            if e is None:
                continue
            s = summary(self.task.name, e.outcomes)
            stalls = sorted({o["progress_stopped"]["phase"] or "-" for o in e.outcomes if not o["success"]})
            line = (f"- {record.id} (round {record.round}, from {record.parent or 'scratch'}): success "
                    f"{s['success_rate']:.0%}, mean steps {s['mean_steps']:.0f}, failures {s['failures'] or 'none'}")
            if stalls:
                line += f", stalled in phase {', '.join(stalls)}"
            if record.diagnosis:
                line += f"; its diagnosis: {' '.join(record.diagnosis.split())[:300]}"
            lines.append(line)
        best = self.best(before)
        if best is not None:
            lines.append(f"BEST SO FAR: {best.record.id} with success {best.success_rate:.0%}")
        return lines

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> dict:
        marked = {r["round"] for r in self.store.rounds()}
        for round_ in range(self.config.rounds + 1):
            if round_ not in marked:
                self.round(round_)
        best = self.best()
        final = {"best": None, "success_rate": 0.0, "rounds": self.config.rounds}
        if best is not None:
            final.update(best=best.record.id, success_rate=best.success_rate,
                         summary=summary(self.task.name, best.outcomes))
        self.store.set_final(final)
        self.on_event(self.config.rounds, events.FINAL, final)
        return final

    def round(self, round_: int) -> None:
        parent = self.best(before=round_)  # what this round's own work (if resumed) cannot change
        self.on_event(round_, events.ROUND_START, {"parent": parent.record.id if parent else None})
        if round_ == 0 and self.config.initial_controller:
            record = self._initial_file(self.config.initial_controller)
        else:
            record = self._write(round_, parent)
        data = {"controller": record.id, "parent": record.parent, "valid": record.valid, "error": record.error}
        if record.valid:
            outcomes = self._evaluate(record)
            data["summary"] = summary(self.task.name, outcomes)
        best = self.best()
        data["best"] = best.record.id if best else None
        data["best_success_rate"] = best.success_rate if best else None
        self.store.mark_round(round_, data)
        self.on_event(round_, events.ROUND_DONE, data)

    def _initial_file(self, path: str) -> ControllerRecord:
        try:
            source = pathlib.Path(path).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"initial_controller: cannot read {path}: {exc}") from None
        error = self.smoke(source)
        record = ControllerRecord("c0", 0, source, sha256(source), None, (), None, error is None, error)
        self.store.add_controller(record)
        return record

    def _write(self, round_: int, parent: Evaluated | None) -> ControllerRecord:
        """Ask for a controller (a rewrite of ``parent``), check it, repair it; the last attempt.

        Every attempt is stored as a controller (``c<round>``, then ``c<round>.<repair>``)."""
        prefill = ""
        if parent is None:
            step, messages = "propose", _prompt.propose_messages(self.task, self.obs_keys)
            prefill = _prompt.propose_prefill(self.task)
        else:
            current = {"id": parent.record.id, "source": parent.record.source, "success_rate": parent.success_rate}
            step, messages = "rewrite", _prompt.rewrite_messages(self.task, self.obs_keys, current, parent.outcomes,
                                                                 self.memory(round_), self._frames(parent))
        llm = LLMSession(self.llm, round_, self.config.llm.temperature, self.config.seed)
        records: list[ControllerRecord] = []

        def repair(d: Draft, r: int) -> LLMRequest:  # a repair is a whole new reply
            d.messages = _prompt.repair_messages(d.messages, d.reply.full_text, d.error)
            return llm.request(f"repair-{r + 1}", d.messages, max_tokens=self.config.max_tokens)

        def on_round(drafts: Sequence[Draft]) -> None:
            d = drafts[0]
            cid = f"c{round_}" if not records else f"c{round_}.{len(records)}"
            record = ControllerRecord(cid, round_, d.source, sha256(d.source) if d.source else None,
                                      parent.record.id if parent else None, tuple(d.keys), d.said,
                                      d.error is None, d.error)
            self.store.add_controller(record)
            records.append(record)
            self.on_event(round_, events.CONTROLLER, {"id": cid, "valid": record.valid, "error": d.error,
                                                      "diagnosis": d.said})

        first = llm.request(step, messages, prefill=prefill, stop=("\n```",) if prefill else (),
                            max_tokens=self.config.max_tokens)
        write(llm.complete_many, [Draft(list(messages))], [first],
              Drafting(extract=lambda d, reply: _prompt.parse_reply(reply.full_text),
                       check=lambda sources: [self.smoke(s) for s in sources],
                       repair=repair, max_repairs=self.config.max_repairs, on_round=on_round))
        return records[-1]

    def _frames(self, parent: Evaluated) -> list[tuple[int, Frame]]:
        """The key frames to attach: of the parent's first failed episode with frames, else its first."""
        if not self.config.send_images:
            return []
        shot = {i: self.store.frames(parent.record.id, i) for i in range(len(parent.outcomes))}
        shot = {i: f for i, f in shot.items() if f}
        failed = [i for i in shot if not parent.outcomes[i]["success"]]
        pick = failed[0] if failed else min(shot, default=None)
        return [] if pick is None else [(pick, f) for f in shot[pick]]

    def smoke(self, source: str) -> str | None:
        """The compile-and-smoke check: None, or why the controller cannot run."""
        with ControllerProcess(source, self.config.limits, seed=self.config.seed, dim=self.host.action_dim) as c:
            failure = c.start()
            if failure is not None:
                return f"{failure.reason.value}: {failure.detail}"
            episode = run_episode(self.host, c, self.config.seed, horizon=self.config.smoke_steps)
        outcome = episode.outcome
        if outcome["end"] in ("horizon", "success"):
            return None
        return f"{outcome['end']}: {outcome['detail']}"

    def _evaluate(self, record: ControllerRecord) -> list[dict]:
        cam = self.config.camera

        def store(i: int, episode: Episode) -> None:
            self.store.add_episode(record.id, i, episode.seed, episode.outcome, episode.frames)
            self.on_event(record.round, events.EPISODE, {"controller": record.id, "episode": i, **episode.outcome})

        return evaluate(self.host, record.source, self.seeds, horizon=self.config.horizon, limits=self.config.limits,
                        frames_for=cam.episodes_with_frames if cam.enabled else 0, max_frames=cam.max_frames,
                        done=self.store.episodes(record.id), on_episode=store,
                        worker_seed=derive_seed(self.config.seed, record.id))


