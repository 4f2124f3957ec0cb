"""CifarNet: the model NXP's RT700 ExecuTorch example runs, rebuilt from its layer list.

NXP's own module imports torchvision and ships no weights, and nothing can be fetched at run time,
so this is an independent module with the same layers (the CifarNet of NXP's eIQ ExecuTorch example:
three 5x5 convolutions with padding 2 and max pooling, then linear and softmax) and seeded random
weights. It keeps NXP's layer list exactly, which has *no* activation after the convolutions, so the
operator mix (pad, conv, max_pool, linear, softmax) matches what the Neutron example profiles.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

INPUT_SHAPE = (1, 3, 32, 32)
NUM_CLASSES = 10
# 64 channels x 4 x 4 after the third pooling; written out so a wrong shape fails loudly at `linear`.
_FLAT_FEATURES = 64 * 4 * 4
_PAD = (2, 2, 2, 2)


class CifarNet(nn.Module):
    """pad 2, conv 3->32 k5, maxpool 2/2, pad 2, conv 32->32 k5, maxpool 2/2, pad 2, conv 32->64 k5,
    maxpool k1 s2, flatten, linear 1024->10, softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=5)
        self.conv2 = nn.Conv2d(32, 32, kernel_size=5)
        self.conv3 = nn.Conv2d(32, 64, kernel_size=5)
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.pool_last = nn.MaxPool2d(kernel_size=1, stride=2)
        self.fc = nn.Linear(_FLAT_FEATURES, NUM_CLASSES)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.conv1(F.pad(x, _PAD)))
        x = self.pool(self.conv2(F.pad(x, _PAD)))
        x = self.pool_last(self.conv3(F.pad(x, _PAD)))
        # Reshape to (-1, 1024) rather than flatten(start_dim=1): same result in NCHW, and it is the
        # form NXP uses so the Neutron converter sees one fully connected layer over all features.
        x = torch.reshape(x, (-1, _FLAT_FEATURES))
        return self.softmax(self.fc(x))


def build(seed: int) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A CifarNet in eval mode with weights drawn from `seed`, and one seeded input in [-1, 1).

    The layers' default init draws from the global RNG, so it runs on a forked copy; our values come
    from a private generator. Loading a model thus never changes a caller's own random draws.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        model = CifarNet()
    with torch.no_grad():
        for layer in (model.conv1, model.conv2, model.conv3, model.fc):
            # Uniform in +-1/sqrt(fan_in), PyTorch's default bound, so activations stay in range.
            bound = 1.0 / layer.weight[0].numel() ** 0.5
            for param in (layer.weight, layer.bias):
                param.copy_((torch.rand(param.shape, generator=gen) * 2 - 1) * bound)
    example = torch.rand(INPUT_SHAPE, generator=gen) * 2 - 1
    return model.eval(), (example,)
