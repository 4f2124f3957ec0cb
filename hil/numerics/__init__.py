"""Numerics beside timing: the target's outputs on real inputs, compared with the model and the host runtime.

tensors: what a program takes and gives (from its .pte) and the inputs a run feeds it;
metrics: the error figures of one output against a reference;
check:   the comparison of a run (eager PyTorch, host ExecuTorch runtime) and the profile's `numerics` section.
The debugger side (writing inputs, reading outputs) is hil.target.tensor_io.
"""
