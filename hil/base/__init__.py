"""The base every other package stands on: errors and exit codes, logging and progress, atomic writes,
the JSON record, paths, locks and the field checks. It imports nothing else of hil."""
