"""The `hil` command line (console script `hil = hil.cli.main.main:console_main`): parsing, commands, and the
tables they print. A front end: nothing in hil imports it."""
