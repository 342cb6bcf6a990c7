"""Tests of csro.solvers.meta (a package so its module names cannot clash with other test folders)."""
