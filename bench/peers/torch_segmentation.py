"""Peer of the segmentation and inverse-imaging step benches: the
trainer's `small` Tiramisu, DeepLabv3+ and inverse-imaging
FC-DenseNet built layer for layer in PyTorch (the same layouts as
trainer/src/models/segmentation/{tiramisu,deeplab}.rs and
trainer/src/models/inverse/mod.rs), trained with Adam on random inputs
(per-pixel weighted cross-entropy on 16-channel fields; Huber loss with
cutoff 10 from 16 CBED patterns), on a fixed number of CPU threads.
Prints one JSON line: median step seconds and forward-only seconds.

    bench/.venv/bin/python bench/peers/torch_segmentation.py --model tiramisu --batch 2 --threads 2
    bench/.venv/bin/python bench/peers/torch_segmentation.py --model inverse --height 32 --width 32
    bench/.venv/bin/python bench/peers/torch_segmentation.py --model deeplabv3plus --precision bf16
"""
import argparse
import json
import time

import torch
from torch import nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--model", choices=["tiramisu", "deeplabv3plus", "inverse"], required=True)
parser.add_argument("--batch", type=int, default=2)
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--height", type=int, default=112)
parser.add_argument("--width", type=int, default=208)
# bf16: the forward pass and the loss under torch.autocast("cpu",
# dtype=torch.bfloat16) (convolutions and matrix products in bf16 through
# oneDNN, on AVX512_BF16 or AMX where the CPU has them), the optimiser on
# the f32 parameters: PyTorch's mixed-precision recipe.
parser.add_argument("--precision", choices=["f32", "bf16"], default="f32")
args = parser.parse_args()
autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
torch.set_num_threads(args.threads)
torch.set_num_interop_threads(1)

CLASSES, CHANNELS = 3, 16


def bn_relu_conv(c_in, c_out, k):
    return nn.Sequential(nn.BatchNorm2d(c_in), nn.ReLU(), nn.Conv2d(c_in, c_out, k, padding=k // 2))


class DenseBlock(nn.Module):
    def __init__(self, c_in, layers, growth, k, p, after=None):
        super().__init__()
        self.layers = nn.ModuleList(bn_relu_conv(c_in + i * growth, growth, k) for i in range(layers))
        self.p, self.after, self.c_in = p, after, c_in

    def forward(self, x):
        for layer in self.layers:
            h = F.dropout(layer(x), self.p, self.training)
            x = torch.cat([x, h], 1)
        if self.after is not None:
            # Laanait et al.: ReLU then dropout after every dense block.
            x = F.dropout(F.relu(x), self.after, self.training)
        return x, x[:, self.c_in:]


class Tiramisu(nn.Module):
    """Jégou et al. 2017; `small`: first 16, blocks 2, 2 (down), 2 (bottleneck), growth 8, 3x3."""

    def __init__(self, first=16, blocks=(2, 2, 2), growth=8, k=3, p=0.2, classes=CLASSES, pool="max", after=None):
        super().__init__()
        self.p, self.pool = p, F.max_pool2d if pool == "max" else F.avg_pool2d
        self.first = nn.Conv2d(CHANNELS, first, k, padding=k // 2)
        ch, skips = first, []
        self.down, self.td = nn.ModuleList(), nn.ModuleList()
        for n in blocks[:-1]:
            self.down.append(DenseBlock(ch, n, growth, k, p, after))
            ch += n * growth
            skips.append(ch)
            self.td.append(bn_relu_conv(ch, ch, 1))
        self.bottleneck = DenseBlock(ch, blocks[-1], growth, k, p, after)
        added = blocks[-1] * growth
        self.tu, self.up = nn.ModuleList(), nn.ModuleList()
        for n, skip in zip(reversed(blocks[:-1]), reversed(skips)):
            self.tu.append(nn.ConvTranspose2d(added, added, 3, stride=2, padding=1, output_padding=1))
            self.up.append(DenseBlock(added + skip, n, growth, k, p, after))
            ch = added + skip + n * growth
            added = n * growth
        self.last = nn.Conv2d(ch, classes, 1)

    def forward(self, x):
        h = self.first(x)
        skips = []
        for block, td in zip(self.down, self.td):
            h, _ = block(h)
            skips.append(h)
            h = self.pool(F.dropout(td(h), self.p, self.training), 2)
        h, new = self.bottleneck(h)
        for tu, block, skip in zip(self.tu, self.up, reversed(skips)):
            h, new = block(torch.cat([tu(new), skip], 1))
        return self.last(h)


def conv_bn(c_in, c_out, k, stride=1, dilation=1):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, k, stride, padding=dilation * (k - 1) // 2, dilation=dilation, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    )


def up_bn(c_in, c_out):
    return nn.Sequential(
        nn.ConvTranspose2d(c_in, c_out, 3, stride=2, padding=1, output_padding=1), nn.BatchNorm2d(c_out), nn.ReLU()
    )


class Bottleneck(nn.Module):
    def __init__(self, c_in, inner, stride, dilation):
        super().__init__()
        out = 4 * inner
        self.reduce = conv_bn(c_in, inner, 1)
        self.spatial = conv_bn(inner, inner, 3, stride, dilation)
        self.expand = nn.Sequential(nn.Conv2d(inner, out, 1, bias=False), nn.BatchNorm2d(out))
        self.shortcut = None
        if stride != 1 or c_in != out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        h = self.expand(self.spatial(self.reduce(x)))
        return F.relu(h + (x if self.shortcut is None else self.shortcut(x)))


class Deeplab(nn.Module):
    """`small`: stem 8, one bottleneck per stage of width 8, ASPP 32 at rates 1, 2, 3, low level 8, decoder 16."""

    def __init__(self, stem=8, stages=(1, 1, 1, 1), width=8, aspp=32, rates=(1, 2, 3), low=8, dec=16):
        super().__init__()
        self.stem = conv_bn(CHANNELS, stem, 7, stride=2)
        blocks, c_in = [], stem
        for i, (n, (stride, dilation)) in enumerate(zip(stages, [(1, 1), (2, 1), (2, 1), (1, 2)])):
            stage = []
            for b in range(n):
                stage.append(Bottleneck(c_in if b == 0 else 4 * (width << i), width << i, stride if b == 0 else 1, dilation))
            c_in = 4 * (width << i)
            blocks.append(nn.Sequential(*stage))
        self.stages = nn.ModuleList(blocks)
        self.aspp = nn.ModuleList([conv_bn(c_in, aspp, 1)] + [conv_bn(c_in, aspp, 3, dilation=r) for r in rates])
        self.image_pool = nn.Conv2d(c_in, aspp, 1)
        self.project = conv_bn(5 * aspp, aspp, 1)
        self.to_quarter = nn.Sequential(up_bn(aspp, dec), up_bn(dec, dec))
        self.low = conv_bn(4 * width, low, 1)
        self.refine = nn.Sequential(conv_bn(dec + low, dec, 3), conv_bn(dec, dec, 3))
        self.to_full = nn.Sequential(*[nn.Sequential(up_bn(dec, dec), conv_bn(dec, dec, 3), conv_bn(dec, dec, 3)) for _ in range(2)])
        self.classify = nn.Conv2d(dec, CLASSES, 1)

    def forward(self, x):
        h = F.max_pool2d(self.stem(x), 3, 2, 1)
        low = None
        for i, stage in enumerate(self.stages):
            h = stage(h)
            if i == 0:
                low = h
        branches = [b(h) for b in self.aspp]
        pooled = F.relu(self.image_pool(h.mean((2, 3), keepdim=True)))
        branches.append(pooled.expand(-1, -1, h.shape[2], h.shape[3]))
        h = self.to_quarter(self.project(torch.cat(branches, 1)))
        h = self.refine(torch.cat([h, self.low(low)], 1))
        return self.classify(self.to_full(h))


torch.manual_seed(1)
if args.model == "tiramisu":
    model = Tiramisu()
elif args.model == "deeplabv3plus":
    model = Deeplab()
else:
    # inverse `small`: 16 patterns in, one density out; growth 16, average
    # pooling, ReLU (dropout 0) after every dense block.
    model = Tiramisu(first=16, blocks=(2, 2, 2), growth=16, k=3, p=0.0, classes=1, pool="avg", after=0.0)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
weights = torch.tensor([1.0, 38.0, 7.8])
x = torch.rand(args.batch, CHANNELS, args.height, args.width)
y = torch.randint(0, CLASSES, (args.batch, args.height, args.width))
density = torch.randn(args.batch, 1, args.height, args.width)


def step():
    optimizer.zero_grad(set_to_none=True)
    with autocast:
        if args.model == "inverse":
            loss = F.huber_loss(model(x), density, delta=10.0)
        else:
            loss = F.cross_entropy(model(x), y, weight=weights, reduction="none").mean()
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
    "model": args.model,
    "batch": args.batch,
    "threads": args.threads,
    "parameters": sum(p.numel() for p in model.parameters()),
    "step_seconds": steps[len(steps) // 2],
    "forward_seconds": forwards[len(forwards) // 2],
    "torch": torch.__version__,
    "precision": args.precision,
}))
