"""Act–Observe–Rewrite (Kumar, arXiv 2603.04466): LLM-written robot controllers on robosuite.

A whole Python ``Controller`` class drives a simulated Panda arm (``_sim``) from a sandboxed
worker (``_controller``); each episode becomes a structured outcome with key frames
(``_observe``, ``_episode``); between rounds an LLM reads the outcomes and the episodic memory,
diagnoses, and rewrites the whole class (``_prompt``, ``_loop``); everything is written to the
run's ``aor.db`` (``_store``) and shown by ``write_aor_report`` (``_report``). ``start``, ``resume``,
``status`` and ``report`` are the run kind ``aor`` of ``csro.runkinds`` (``_runs``). See docs/aor.md.
"""

from csro.robots._config import AorConfig, ControllerLimits, load_aor_config, parse_aor_config
from csro.robots._controller import ControllerProcess, check_action
from csro.robots._episode import Episode, evaluate, run_episode, summary
from csro.robots._observe import Observer, describe
from csro.robots._runs import report, resume, start, status
from csro.robots._sim import TASKS, SimError, SimHost, get_task
from csro.robots._store import DB_NAME, AorStore

__all__ = ["AorConfig", "AorStore", "ControllerLimits", "ControllerProcess", "DB_NAME", "Episode", "Observer",
           "SimError", "SimHost", "TASKS", "check_action", "describe", "evaluate", "get_task", "load_aor_config",
           "parse_aor_config", "report", "resume", "run_episode", "start", "status", "summary"]
