"""The programs of the exact-count regression bench (bench/exact_regression.py).

`narrow` / `wide`: CifarNet and CifarNet with conv3 12.5% wider (bench/noise_models.py, the host-runtime
noise bench's pair), so both benches judge the same change. `base` / `plus1`: a two-convolution
network whose second convolution has 100 output channels, and the same with 101: that convolution
does 1% more multiply-accumulates (the mean after it 1% more additions), nothing else changes.
"""

from __future__ import annotations

import torch

from noise_models import narrow, wide  # noqa: F401  (re-exported: the bench names them here)

BASE_CHANNELS = 100


class TwoConv(torch.nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(self.conv2(torch.relu(self.conv1(x))), dim=(2, 3))


def _two_conv(channels: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = TwoConv(channels).eval()
        return model, (torch.randn(1, 3, 16, 16),)


def base() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return _two_conv(BASE_CHANNELS)


def plus1() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return _two_conv(BASE_CHANNELS + 1)
