"""A hand-written phase-based controller for robosuite Stack (see docs/aor.md)."""

import math

import numpy as np


def yaw(quat):
    """The heading about z of an (x, y, z, w) quaternion's x axis."""
    x, y, z, w = quat
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def square_error(target, current):
    """The turn in (-45, 45] degrees that lines a square up with ``target`` (a cube looks alike every 90)."""
    return (target - current + math.pi / 4) % (math.pi / 2) - math.pi / 4


class Controller:
    """Grasp cube A from above, lift it, carry it over cube B, lower it until it rests on B,
    let go and back off."""

    GAIN = 10.0  # action per metre of error (an action of 1 moves the target 5 cm)
    TURN = 4.0  # rotation action per radian of error (an action of 1 turns 0.5 rad)
    STACKED = 0.045  # A's centre above B's when A (4 cm) sits on B (5 cm)

    def reset(self):
        self.phase = "approach"
        self.count = 0

    def move(self, eef, target, grip, turn=0.0):
        delta = np.clip(self.GAIN * (np.asarray(target) - eef), -1.0, 1.0)
        return [float(d) for d in delta] + [0.0, 0.0, float(np.clip(self.TURN * turn, -1.0, 1.0)), grip]

    def after(self, steps, phase):
        self.count += 1
        if self.count >= steps:
            self.phase, self.count = phase, 0

    def get_action(self, obs):
        eef = np.asarray(obs["robot0_eef_pos"])
        a = np.asarray(obs["cubeA_pos"])
        b = np.asarray(obs["cubeB_pos"])
        turn = square_error(yaw(obs["cubeA_quat"]), yaw(obs["robot0_eef_quat"]))
        if self.phase == "approach":  # above A, fingers turned square to its faces
            above = a + [0.0, 0.0, 0.10]
            if np.linalg.norm(above - eef) < 0.015 and abs(turn) < 0.05:
                self.phase = "descend"
            return self.move(eef, above, -1.0, turn)
        if self.phase == "descend":  # close at A, or where the fingers stopped
            self.count += 1
            if np.linalg.norm(a - eef) < 0.01 or self.count > 40:
                self.phase, self.count = "close", 0
            return self.move(eef, a, -1.0, turn)
        if self.phase == "close":
            self.after(15, "lift")
            return self.move(eef, a, 1.0)
        hold = eef - a  # where the gripper holds A, so that A itself is what gets placed
        if self.phase in ("lift", "carry") and hold[2] > 0.04:  # A is not in the hand: try again
            self.phase = "approach"
            return self.move(eef, eef + [0.0, 0.0, 0.05], -1.0)
        if self.phase == "lift":
            target = [a[0], a[1], b[2] + 0.12] + hold
            if abs(a[2] - (b[2] + 0.12)) < 0.015:
                self.phase = "carry"
            return self.move(eef, target, 1.0)
        if self.phase == "carry":
            over = np.asarray([b[0], b[1], b[2] + 0.12])
            if np.linalg.norm(over[:2] - a[:2]) < 0.006:
                self.phase = "lower"
            return self.move(eef, over + hold, 1.0)
        if self.phase == "lower":
            rest = np.asarray([b[0], b[1], b[2] + self.STACKED + 0.005])
            if a[2] - rest[2] < 0.005:
                self.phase = "release"
            return self.move(eef, rest + hold, 1.0)
        if self.phase == "release":
            self.after(10, "retreat")
            return self.move(eef, eef, -1.0)
        return self.move(eef, [eef[0], eef[1], b[2] + 0.15], -1.0)
