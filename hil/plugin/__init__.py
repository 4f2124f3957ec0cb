"""The pytest plugin (entry points `hil = hil.plugin.hooks.hooks`, `hil_regress = hil.plugin.hooks.regress_hooks`):
fixtures, options, board sessions, output and the regression gate's hooks. A front end: nothing in hil
imports it."""
