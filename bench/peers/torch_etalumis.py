"""Peer of the Etalumis step bench: the trainer's `small`
Etalumis network built layer for layer in PyTorch (the layout of
trainer/src/models/etalumis/{net,lstm,proposal}.rs, itself pyprob's
InferenceNetworkLSTM), trained with Adam on the same batches of real traces
the bench exported, with the same algorithm: the batch's observations
through the 3-D CNN at once, one LSTM pass per sub-batch of one trace type,
each address's head once over its rows of every sub-batch. Runs on a fixed
number of CPU threads and prints one JSON line: median step seconds and
forward-only seconds.

    bench/.venv/bin/python bench/peers/torch_etalumis.py --batches DIR --threads 2 [--precision bf16]

DIR holds `batches.json` (the layout, the configuration, each batch's
traces as layout positions and choices) and `obs-K.f32` (batch K's
observations, little-endian float32, already standardised).
"""
import argparse
import json
import math
import os
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--batches", required=True)
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--threads", type=int, default=2)
# bf16: the loss (the 3-D CNN, the LSTM and the heads) under
# torch.autocast("cpu", dtype=torch.bfloat16), the optimiser on the f32
# parameters: PyTorch's mixed-precision recipe.
parser.add_argument("--precision", choices=["f32", "bf16"], default="f32")
args = parser.parse_args()
autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
torch.set_num_threads(args.threads)
torch.set_num_interop_threads(1)
# Argument checks cost a pass over every tensor a distribution is made of;
# our side checks nothing either.
torch.distributions.Distribution.set_default_validate_args(False)

with open(os.path.join(args.batches, "batches.json")) as f:
    spec = json.load(f)
config, layout, shape = spec["config"], spec["layout"], spec["observation"]
K = config["mixture_components"]


def head_width(a):
    return 3 * K if a["kind"] in ("normal", "uniform") else (a["outcomes"] if a["kind"] in ("categorical", "poisson") else 1)


def sample_inputs(a):
    return a["outcomes"] if a["kind"] in ("categorical", "poisson") else 1


class Address(nn.Module):
    def __init__(self, a):
        super().__init__()
        width = head_width(a)
        hidden = (config["lstm_hidden"] + width) // 2
        self.embedding = nn.Parameter(torch.randn(config["address_embedding"]))
        self.sample = nn.Linear(sample_inputs(a), config["sample_embedding"])
        self.hidden = nn.Linear(config["lstm_hidden"], hidden)
        self.out = nn.Linear(hidden, width)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        c = config["conv_channels"]
        self.convs = nn.ModuleList(nn.Conv3d(i, o, 3) for i, o in zip([1] + c[:-1], c))
        size = list(shape)
        for i in range(5):
            size = [s - 2 for s in size]
            if i in (1, 4):
                size = [s // 2 for s in size]
        self.dense = nn.Linear(c[-1] * math.prod(size), config["observation_embedding"])
        inputs = config["observation_embedding"] + config["sample_embedding"] + config["address_embedding"]
        self.lstm = nn.LSTM(inputs, config["lstm_hidden"], config["lstm_depth"], batch_first=True)
        self.addresses = nn.ModuleList(Address(a) for a in layout)

    def observe(self, x):
        for i, conv in enumerate(self.convs):
            x = F.relu(conv(x))
            if i in (1, 4):
                x = F.max_pool3d(x, 2)
        return F.relu(self.dense(x.flatten(1)))


def embed_values(net, a, values, first, second):
    layer, spec_a = net.addresses[a], layout[a]
    kind = spec_a["kind"]
    if kind in ("categorical", "poisson"):
        idx = values.long().clamp(0, spec_a["outcomes"] - 1)
        x = F.one_hot(idx, spec_a["outcomes"]).float()
    elif kind == "uniform":
        x = ((values - first) / (second - first)).unsqueeze(1)
    elif kind == "normal":
        x = ((values - first) / second).unsqueeze(1)
    else:
        x = values.unsqueeze(1)
    return F.relu(layer.sample(x))


def log_density(a, out, values, first, second):
    kind = layout[a]["kind"]
    v, p1, p2 = values.unsqueeze(1), first.unsqueeze(1), second.unsqueeze(1)
    if kind == "normal":
        means = p1 + out[:, :K] * p2
        stds = out[:, K:2 * K].exp() * p2
        w = F.log_softmax(out[:, 2 * K:], 1)
        return torch.logsumexp(w + torch.distributions.Normal(means, stds).log_prob(v), 1)
    if kind == "uniform":
        rng = p2 - p1
        means = p1 + torch.sigmoid(out[:, :K]) * rng
        stds = rng / 1000 + torch.sigmoid(out[:, K:2 * K]) * rng * 10
        normal = torch.distributions.Normal(means, stds)
        mass = normal.cdf(p2) - normal.cdf(p1)
        w = F.log_softmax(out[:, 2 * K:], 1)
        return torch.logsumexp(w + normal.log_prob(v) - mass.log(), 1)
    if kind in ("categorical", "poisson"):
        idx = values.long().clamp(0, layout[a]["outcomes"] - 1)
        return F.log_softmax(out, 1).gather(1, idx.unsqueeze(1)).squeeze(1)
    return values * F.logsigmoid(out[:, 0]) + (1 - values) * F.logsigmoid(-out[:, 0])


def loss_of(net, batch, obs):
    traces = batch["traces"]
    embedded = net.observe(obs)
    types = {}
    for row, t in enumerate(traces):
        types.setdefault(tuple(t["positions"]), []).append(row)
    per_address = {}
    for positions, rows in types.items():
        b, steps = len(rows), len(positions)
        choices = torch.tensor([traces[r]["choices"] for r in rows])  # [b, steps, 3]
        e = embedded[rows].unsqueeze(1).expand(b, steps, -1)
        addr = torch.stack([net.addresses[a].embedding for a in positions]).unsqueeze(0).expand(b, steps, -1)
        prev = [torch.zeros(b, config["sample_embedding"])]
        for t in range(1, steps):
            c = choices[:, t - 1]
            prev.append(embed_values(net, positions[t - 1], c[:, 0], c[:, 1], c[:, 2]))
        out, _ = net.lstm(torch.cat([e, torch.stack(prev, 1), addr], 2))
        for t, a in enumerate(positions):
            entry = per_address.setdefault(a, ([], []))
            entry[0].append(out[:, t])
            entry[1].append(choices[:, t])
    total = 0.0
    for a, (outs, chosen) in per_address.items():
        layer = net.addresses[a]
        head = layer.out(F.relu(layer.hidden(torch.cat(outs))))
        c = torch.cat(chosen)
        total = total + log_density(a, head, c[:, 0], c[:, 1], c[:, 2]).sum()
    return -total / len(traces)


net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
batches = spec["batches"]
voxels = math.prod(shape)
observations = []
for k, batch in enumerate(batches):
    raw = np.fromfile(os.path.join(args.batches, f"obs-{k}.f32"), dtype="<f4")
    observations.append(torch.from_numpy(raw.reshape(len(batch["traces"]), 1, *shape).copy()))
step_times, forward_times = [], []
for step in range(args.warmup + args.steps):
    k = step % len(batches)
    t = time.perf_counter()
    optimizer.zero_grad()
    with autocast:
        loss = loss_of(net, batches[k], observations[k])
    forward = time.perf_counter() - t
    loss.backward()
    optimizer.step()
    elapsed = time.perf_counter() - t
    if step >= args.warmup:
        step_times.append(elapsed)
        forward_times.append(forward)
parameters = sum(p.numel() for p in net.parameters())
print(json.dumps({
    "step_seconds": float(np.median(step_times)),
    "forward_seconds": float(np.median(forward_times)),
    "parameters": parameters,
    "torch": torch.__version__,
    "precision": args.precision,
}))
