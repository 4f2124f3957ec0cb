"""Source text of small Linear + ReLU models, for tests that write a model file and run `hil` or pytest
in a child process. Sizes and seeds differ between tests so each exports its own program."""

from __future__ import annotations

import textwrap


def linear_relu_source(*, inputs: int, outputs: int, seed: int = 0, name: str = "Tiny") -> str:
    """A model file with `factory()` returning a seeded Linear(inputs, outputs) + ReLU and its example input."""
    return textwrap.dedent(
        f"""
        import torch

        class {name}(torch.nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed({seed})
                self.fc = torch.nn.Linear({inputs}, {outputs})

            def forward(self, x):
                return torch.relu(self.fc(x))

        def factory():
            return {name}().eval(), (torch.randn(1, {inputs}),)
        """
    )
