"""ETDump + ETRecord + console log -> profile (dict, saved as profile.json) and a text table.

Import the submodules directly; this package stays light so the console parser can be used
without importing torch or ExecuTorch (profile.py imports them only when it runs).
"""
