"""A hand-written phase-based controller for robosuite PickPlaceCan (see docs/aor.md)."""

import numpy as np


class Controller:
    """Grasp the can from above, lift it over the bin walls, carry it over the target slot,
    lower it, let go and back off."""

    GAIN = 10.0  # action per metre of error (an action of 1 moves the target 5 cm)
    CARRY_Z = 1.05  # high enough to clear both bins' walls with the can hanging below

    def reset(self):
        self.phase = "approach"
        self.count = 0

    def move(self, eef, target, grip):
        delta = np.clip(self.GAIN * (np.asarray(target) - eef), -1.0, 1.0)
        return [float(d) for d in delta] + [0.0, 0.0, 0.0, grip]

    def after(self, steps, phase):
        self.count += 1
        if self.count >= steps:
            self.phase, self.count = phase, 0

    def get_action(self, obs):
        eef = np.asarray(obs["robot0_eef_pos"])
        can = np.asarray(obs["Can_pos"])
        goal = np.asarray(obs["target_pos"])
        if self.phase == "approach":
            above = can + [0.0, 0.0, 0.10]
            if np.linalg.norm(above - eef) < 0.015:
                self.phase = "descend"
            return self.move(eef, above, -1.0)
        if self.phase == "descend":  # close at the can, or where the fingers stopped
            self.count += 1
            if np.linalg.norm(can - eef) < 0.01 or self.count > 40:
                self.phase, self.count = "close", 0
            return self.move(eef, can, -1.0)
        if self.phase == "close":
            self.after(15, "lift")
            return self.move(eef, can, 1.0)
        if self.phase == "lift":
            if eef[2] > self.CARRY_Z - 0.02:
                self.phase = "carry"
            return self.move(eef, [eef[0], eef[1], self.CARRY_Z], 1.0)
        if self.phase == "carry":
            over = [goal[0], goal[1], self.CARRY_Z]
            if np.linalg.norm(np.asarray(over) - eef) < 0.02:
                self.phase = "lower"
            return self.move(eef, over, 1.0)
        if self.phase == "lower":
            low = goal + [0.0, 0.0, 0.10]
            if np.linalg.norm(low - eef) < 0.015:
                self.phase = "release"
            return self.move(eef, low, 1.0)
        if self.phase == "release":
            self.after(10, "retreat")
            return self.move(eef, eef, -1.0)
        return self.move(eef, [eef[0], eef[1], self.CARRY_Z], -1.0)
