"""Boards: one small class per kind of target, all behind the `Board` protocol."""
