"""Rewrite: the prompts of the slow loop, and what is taken out of the LLM's reply.

The AOR paper (Kumar, arXiv 2603.04466) shows the LLM the current source, the episodic
memory and a diagnostic prompt asking first for the failure mode, the root-cause location
(perception / logic / parameters) and the single most important change, then the whole new
class. Our wording and layout. The outcomes are text (the phase log, distances, positions
at the end); the key frames of one of the parent's episodes (the first failed one that has
frames, else the first) are attached as images for providers that take them.
"""

from __future__ import annotations

from csro.llm import Message
from csro.extract import Extracted, extract_code

from ._controller import CLASS_NAME
from ._observe import describe
from ._sim import Task
from ._store import Frame

SYSTEM = ("You write Python controllers for a simulated Franka Panda arm (robosuite, 20 control steps a "
          "second). You reply with plain text and one ```python code block.")

API = f'''\
class {CLASS_NAME}:
    def reset(self) -> None:
        """Called at the start of every episode (a fresh instance each episode)."""
        self.phase = "approach"   # name the phase you are in; it is logged every step

    def get_action(self, obs: dict) -> list:
        """obs: a dict of lists of floats (positions in metres, world frame, z up).
        Return 7 numbers in [-1, 1]: [dx, dy, dz, dax, day, daz, grip].
        dx, dy, dz move the gripper: 1.0 asks for 5 cm this step (use a gain ~10 on the error).
        dax, day, daz rotate it (keep 0 for a top-down grasp). grip: -1 open, +1 close."""
'''

RULES = ("Rules: only `import numpy as np`, `math` and the standard library; return a plain list (use "
         "`.tolist()` or `float(...)` on numpy values); set self.phase whenever the phase changes; every "
         "episode ends after a fixed number of steps, so do not wait longer than needed.")

DIAGNOSE = ("First write your diagnosis, three lines:\n"
            "FAILURE MODE: what went wrong, from the outcomes\n"
            "ROOT CAUSE: perception, logic or parameters, and where in the code\n"
            "MOST IMPORTANT CHANGE: the single change that fixes it\n"
            f"Then write the whole new {CLASS_NAME} class in one ```python block.")


def object_name(task: Task) -> str:
    return task.object_key.removesuffix("_pos")


def propose_messages(task: Task, obs_keys: list[str]) -> list[Message]:
    """The first controller, written from the task alone."""
    text = (f"TASK ({task.name}): {task.goal}\nObservation keys: {', '.join(obs_keys)}\n\n"
            f"Write a controller with this API:\n```python\n{API}```\n{RULES}\n"
            f"Plan it as phases (e.g. approach above the object, descend, close, lift). "
            f"Reply with the whole {CLASS_NAME} class in one ```python block.")
    return [Message("system", SYSTEM), Message("user", text)]


def propose_prefill(task: Task) -> str:
    """The start of the first controller's reply: the fence, the class header, ``reset`` and the
    positions of the gripper and the object (the small embedded model copies an API stub
    otherwise; a prefill kept most of its CSRO policies valid, see docs/llm.md)."""
    return ("```python\nimport numpy as np\n\n\nclass Controller:\n    def reset(self):\n"
            "        self.phase = \"approach\"\n\n    def get_action(self, obs):\n"
            "        eef = np.array(obs[\"robot0_eef_pos\"])\n"
            f"        {object_name(task)} = np.array(obs[\"{task.object_key}\"])\n")


def rewrite_messages(task: Task, obs_keys: list[str], current: dict, outcomes: list[dict],
                     memory: list[str], frames: list[tuple[int, Frame]] = ()) -> list[Message]:
    """A rewrite of ``current`` (``{"id", "source", "success_rate"}``) from its episodes' outcomes,
    with ``frames`` (``(episode, Frame)``) attached as images and listed in the text."""
    episodes = "\n".join(describe(o, i, object_name(task)) for i, o in enumerate(outcomes))
    text = (f"TASK ({task.name}): {task.goal}\nObservation keys: {', '.join(obs_keys)}\n\n"
            f"API:\n```python\n{API}```\n{RULES}\n\n"
            f"CURRENT CONTROLLER {current['id']} (success {current['success_rate']:.0%} over "
            f"{len(outcomes)} episodes):\n```python\n{current['source'].rstrip()}\n```\n\n"
            f"ITS EPISODES:\n{episodes}\n\n"
            f"MEMORY (every attempt so far):\n" + "\n".join(memory) + "\n\n")
    if frames:
        text += ("ATTACHED IMAGES, in order (camera in front of the table, looking at the robot): " +
                 "; ".join(f"episode {e} step {f.step} ({f.label})" for e, f in frames) + "\n\n")
    return [Message("system", SYSTEM), Message("user", text + DIAGNOSE, tuple(f.png for _, f in frames))]


def repair_messages(messages: list[Message], reply: str, error: str) -> list[Message]:
    """Send a rewrite that failed its check back with the error."""
    return messages + [Message("assistant", reply), Message("user", (
        f"That controller failed its check in the sandbox: {error[:1200]}\n"
        f"Fix it. Reply with the whole corrected {CLASS_NAME} class in one ```python block."))]


def parse_reply(text: str) -> Extracted:
    """The class, or why there is none; ``said`` is the diagnosis (the prose before the code)."""
    head = text.split("```", 1)[0].strip() if "```" in text else ""
    extracted = extract_code(text, CLASS_NAME)
    return Extracted(extracted.source, extracted.error, head[:1500] or None)
