"""Nightly regression: statistics, budgets, baselines, history and the commands that use them.

Everything here works on profile dicts (schema `et-hil/profile/1`) and run folders, never on a
board: the pipeline produces a run, this package judges it against limits and earlier runs.
"""
