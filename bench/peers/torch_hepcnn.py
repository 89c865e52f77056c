"""Peer of the HEP-CNN step bench: the trainer's HEP-CNN
(trainer/src/models/hepcnn/net.rs, after NERSC's hep_cnn_benchmark:
4 units of 3x3 convolution with bias, ReLU, 2x2 max pool; a fifth 3x3
convolution, ReLU and a global average; one dense layer to 2 logits)
built in PyTorch, trained with Adam on random 3-channel images and labels
(softmax cross-entropy), on a fixed number of CPU threads. Prints one JSON
line: median step seconds and forward-only seconds.

    bench/.venv/bin/python bench/peers/torch_hepcnn.py --size 64 --filters 32 --batch 16 --threads 2
"""
import argparse
import json
import time

import torch
from torch import nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=64)
parser.add_argument("--filters", type=int, default=32)
parser.add_argument("--batch", type=int, default=16)
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--threads", type=int, default=2)
# bf16: the forward pass and the loss under torch.autocast("cpu",
# dtype=torch.bfloat16) (convolutions and matrix products in bf16 through
# oneDNN, on AVX512_BF16 or AMX where the CPU has them), the optimiser on
# the f32 parameters: PyTorch's mixed-precision recipe.
parser.add_argument("--precision", choices=["f32", "bf16"], default="f32")
args = parser.parse_args()
autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
torch.set_num_threads(args.threads)
torch.set_num_interop_threads(1)


class HepCnn(nn.Module):
    def __init__(self, filters, units=4):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(3 if i == 0 else filters, filters, 3, padding=1) for i in range(units + 1))
        self.head = nn.Linear(filters, 2)

    def forward(self, x):
        for conv in self.convs[:-1]:
            # "same" pooling as TensorFlow's: pad an odd side at the end.
            x = F.relu(conv(x))
            x = F.max_pool2d(x, 2, 2, ceil_mode=True)
        x = F.relu(self.convs[-1](x))
        return self.head(x.mean((2, 3)))


torch.manual_seed(1)
model = HepCnn(args.filters)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
x = torch.rand(args.batch, 3, args.size, args.size)
y = torch.randint(0, 2, (args.batch,))


def step():
    optimizer.zero_grad(set_to_none=True)
    with autocast:
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()


steps, forwards = [], []
model.train()
for k in range(args.warmup + args.steps):
    t = time.perf_counter()
    step()
    if k >= args.warmup:
        steps.append(time.perf_counter() - t)
model.eval()
with torch.no_grad():
    for k in range(args.warmup + args.steps):
        t = time.perf_counter()
        with autocast:
            model(x)
        if k >= args.warmup:
            forwards.append(time.perf_counter() - t)
steps.sort()
forwards.sort()
print(json.dumps({
    "model": "hepcnn",
    "size": args.size,
    "filters": args.filters,
    "batch": args.batch,
    "threads": args.threads,
    "parameters": sum(p.numel() for p in model.parameters()),
    "step_seconds": steps[len(steps) // 2],
    "forward_seconds": forwards[len(forwards) // 2],
    "torch": torch.__version__,
    "precision": args.precision,
}))
