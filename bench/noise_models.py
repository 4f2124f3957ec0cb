"""The two programs of the noise benchmark: CifarNet, and CifarNet with its last convolution 12.5% wider.

`wide` changes one layer: conv3 gets 72 output channels instead of 64 (+12.5% multiply-accumulates),
so that convolution is the event that must be caught and named first; the pooling and the linear layer
after it grow with it by a few microseconds.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from hil.aot import cifarnet

WIDE_CHANNELS = 72


class WideCifarNet(cifarnet.CifarNet):
    """CifarNet with conv3 32 -> 72 channels (and the linear layer sized to match)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv3 = torch.nn.Conv2d(32, WIDE_CHANNELS, kernel_size=5)
        self.fc = torch.nn.Linear(WIDE_CHANNELS * 16, cifarnet.NUM_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.conv1(F.pad(x, cifarnet._PAD)))
        x = self.pool(self.conv2(F.pad(x, cifarnet._PAD)))
        x = self.pool_last(self.conv3(F.pad(x, cifarnet._PAD)))
        return self.softmax(self.fc(torch.reshape(x, (-1, WIDE_CHANNELS * 16))))


def narrow() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return cifarnet.build(0)


def wide() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = WideCifarNet().eval()
    return model, cifarnet.build(0)[1]
