"""Peer of the CosmoGAN step bench: the trainer's CosmoGAN
(trainer/src/models/cosmogan/, after MustafaMustafa/cosmoGAN
networks/models/dcgan.py: a generator of a dense layer and four 5x5
transposed convolutions of stride 2 with BatchNorm and ReLU, tanh out; a
discriminator of four 5x5 convolutions of stride 2, BatchNorm after all
but the first, LeakyReLU 0.2, a dense layer to one logit) built in PyTorch
and stepped as the trainer steps it: the discriminator on real maps and on
generated maps cut from the generator, the generator's loss through the
discriminator with its parameters frozen, one backward pass of the sum,
then both Adams (lr 2e-4, beta1 0.5). On random maps, a fixed number of
CPU threads. Prints one JSON line: median step seconds and the median
seconds of the generator making a batch (eval mode).

    bench/.venv/bin/python bench/peers/torch_cosmogan.py --size 64 --filters 16 --batch 16 --threads 2
"""
import argparse
import json
import time

import torch
from torch import nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=64)
parser.add_argument("--filters", type=int, default=16)
parser.add_argument("--noise", type=int, default=64)
parser.add_argument("--layers", type=int, default=4)
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


class Generator(nn.Module):
    def __init__(self, side, filters, noise, layers):
        super().__init__()
        self.base, self.top = side >> layers, filters << (layers - 1)
        self.dense = nn.Linear(noise, self.top * self.base * self.base)
        self.norm0 = nn.BatchNorm2d(self.top)
        channels, ups, norms = self.top, [], []
        for layer in range(layers):
            to = 1 if layer + 1 == layers else channels // 2
            ups.append(nn.ConvTranspose2d(channels, to, 5, stride=2, padding=2, output_padding=1))
            if layer + 1 < layers:
                norms.append(nn.BatchNorm2d(to))
            channels = to
        self.ups, self.norms = nn.ModuleList(ups), nn.ModuleList(norms)

    def forward(self, z):
        h = F.relu(self.norm0(self.dense(z).view(-1, self.top, self.base, self.base)))
        for k, up in enumerate(self.ups):
            h = up(h)
            if k < len(self.norms):
                h = F.relu(self.norms[k](h))
        return torch.tanh(h)


class Discriminator(nn.Module):
    def __init__(self, side, filters, layers):
        super().__init__()
        convs, norms, channels = [], [], 1
        for layer in range(layers):
            to = filters << layer
            convs.append(nn.Conv2d(channels, to, 5, stride=2, padding=2))
            if layer > 0:
                norms.append(nn.BatchNorm2d(to))
            channels = to
        self.convs, self.norms = nn.ModuleList(convs), nn.ModuleList(norms)
        self.dense = nn.Linear(channels * (side >> layers) ** 2, 1)

    def forward(self, x):
        for k, conv in enumerate(self.convs):
            x = conv(x)
            if k > 0:
                x = self.norms[k - 1](x)
            x = F.leaky_relu(x, 0.2)
        return self.dense(x.flatten(1))


torch.manual_seed(1)
generator = Generator(args.size, args.filters, args.noise, args.layers)
discriminator = Discriminator(args.size, args.filters, args.layers)
for p in list(generator.parameters()) + list(discriminator.parameters()):
    if p.dim() > 1:
        nn.init.normal_(p, 0.0, 0.02)
g_optimizer = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
d_optimizer = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
density = torch.rand(args.batch, 1, args.size, args.size).mul(2).pow(2)
real = 2 * density / (density + 4) - 1
ones, zeros = torch.ones(args.batch, 1), torch.zeros(args.batch, 1)


def step():
    g_optimizer.zero_grad(set_to_none=True)
    d_optimizer.zero_grad(set_to_none=True)
    with autocast:
        fake = generator(torch.randn(args.batch, args.noise))
        d_loss = F.binary_cross_entropy_with_logits(discriminator(real), ones) + \
            F.binary_cross_entropy_with_logits(discriminator(fake.detach()), zeros)
        for p in discriminator.parameters():
            p.requires_grad_(False)
        g_loss = F.binary_cross_entropy_with_logits(discriminator(fake), ones)
        for p in discriminator.parameters():
            p.requires_grad_(True)
    (d_loss + g_loss).backward()
    d_optimizer.step()
    g_optimizer.step()


steps, forwards = [], []
generator.train()
discriminator.train()
for k in range(args.warmup + args.steps):
    t = time.perf_counter()
    step()
    if k >= args.warmup:
        steps.append(time.perf_counter() - t)
generator.eval()
with torch.no_grad():
    for k in range(args.warmup + args.steps):
        t = time.perf_counter()
        with autocast:
            generator(torch.ones(args.batch, args.noise))
        if k >= args.warmup:
            forwards.append(time.perf_counter() - t)
steps.sort()
forwards.sort()
parameters = sum(p.numel() for p in generator.parameters()) + sum(p.numel() for p in discriminator.parameters())
print(json.dumps({
    "model": "cosmogan",
    "size": args.size,
    "filters": args.filters,
    "batch": args.batch,
    "threads": args.threads,
    "parameters": parameters,
    "step_seconds": steps[len(steps) // 2],
    "forward_seconds": forwards[len(forwards) // 2],
    "torch": torch.__version__,
    "precision": args.precision,
}))
