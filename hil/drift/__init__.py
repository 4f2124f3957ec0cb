"""The first operator that drifts: intermediate outputs recorded on the target, compared with the ETRecord.

`--hil-debug-outputs` builds the firmware with a debug buffer (ETDumpGen at the intermediate-outputs
level); the harness sizes it before the run (debug_size), reads it beside the ETDump (readout),
and ExecuTorch's Inspector compares every operator's output with the ETRecord's reference graph run on
the inputs the target ran (gap). The profile's `drift` section and the table list operators by gap and
name the first whose SNR drops below the threshold (report).
"""
