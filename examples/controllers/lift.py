"""A hand-written phase-based controller for robosuite Lift (see docs/aor.md)."""

import numpy as np


class Controller:
    """Approach above the cube, descend, close the gripper, lift to a fixed height."""

    GAIN = 10.0  # action per metre of error (an action of 1 moves the target 5 cm)

    def reset(self):
        self.phase = "approach"
        self.closing = 0

    def move(self, eef, target, grip):
        delta = np.clip(self.GAIN * (np.asarray(target) - eef), -1.0, 1.0)
        return [float(d) for d in delta] + [0.0, 0.0, 0.0, grip]

    def get_action(self, obs):
        eef = np.asarray(obs["robot0_eef_pos"])
        cube = np.asarray(obs["cube_pos"])
        if self.phase == "approach":
            above = cube + [0.0, 0.0, 0.10]
            if np.linalg.norm(above - eef) < 0.015:
                self.phase = "descend"
            return self.move(eef, above, -1.0)
        if self.phase == "descend":  # close at the cube, or where the fingers stopped
            self.closing += 1
            if np.linalg.norm(cube - eef) < 0.01 or self.closing > 40:
                self.phase, self.closing = "close", 0
            return self.move(eef, cube, -1.0)
        if self.phase == "close":
            self.closing += 1
            if self.closing >= 15:
                self.phase = "lift"
            return self.move(eef, cube, 1.0)
        return self.move(eef, [cube[0], cube[1], 1.05], 1.0)
