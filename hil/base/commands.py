"""The commands that messages tell a user to run, in words every install has (a wheel's and a checkout's).

Why one module: a message that names `make rt700-sdk` or `make firmware` sends a wheel user to a
Makefile they do not have. Every error, notice and doctor fix that names a command takes it from
here, and the commands themselves are `hil` sub-commands (hil.firmware.sources_cmd, hil.cli.rt700_image); here, in the lowest floor, so boards and runs may name them too.
"""

from __future__ import annotations

SOURCES = "`hil sources` (offline: `HIL_GIT_BASE=<folder of owner/name mirrors> hil sources`)"
RT700_IMAGE = "hil rt700-image"
RT700_ELF = "hil_rt700.elf"


def rt700_image(model: str, delegate: str) -> str:
    """The command that builds the RT700 image of `model`, and how a run then uses it."""
    return (f"`{RT700_IMAGE} --model {model} --delegate {delegate} --out DIR`, then pass --elf DIR/{RT700_ELF} "
            "(pytest: --hil-elf)")
