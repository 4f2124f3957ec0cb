"""A shared lab: labgrid places as boards, the lab file of several boards, one board per session or xdist worker.

labgrid itself runs from its own venv (`.venv-lab`); nothing here imports it (hil/lab/labgrid_cli.py).
"""
