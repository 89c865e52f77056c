"""Data-parallel PyTorch training on a CosmoFlow dataset read by Stagehand.

    torchrun --nproc_per_node 2 torch_ddp.py /data/cosmo

Each rank reads its own share of every epoch (rank and world size come
from torch.distributed), batches arrive as tensors over the loader's
buffers, and a checkpoint holds the loader's place beside the model's.
"""

import sys

import torch
import torch.distributed as dist

import stagehand
import stagehand.torch


def main(root: str, epochs: int = 2) -> None:
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = stagehand.Dataset.from_manifest(root)
    loader = stagehand.Loader(data, batch_size=4, workers=2, seed=0, drop_last=True)
    channels = data.x_shape[-1]
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(
            torch.nn.Conv3d(channels, 8, 3, padding=1),
            torch.nn.LeakyReLU(),
            torch.nn.AdaptiveAvgPool3d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(64, data.y_shape[0]),
        )
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        total = torch.zeros(1)
        for x, y in stagehand.torch.tensors(loader):
            optimiser.zero_grad()
            # CosmoFlow volumes are channels-last; Conv3d wants channels first.
            loss = torch.nn.functional.mse_loss(model(x.permute(0, 4, 1, 2, 3)), y)
            loss.backward()
            optimiser.step()
            total += loss.detach()
        dist.all_reduce(total)
        if dist.get_rank() == 0:
            mean = total.item() / (len(loader) * dist.get_world_size())
            rate = loader.metrics()["samples_per_second"]
            print(f"epoch {epoch}: loss {mean:.4f}, {rate:.0f} samples/s on rank 0")
            torch.save({"model": model.state_dict(), "loader": loader.state_dict()}, "checkpoint.pt")
    # Every rank arrives before any tears its process group down, and the
    # model (whose DDP reducer holds the group) goes first: a rank that
    # exits while another still talks to it, or a group freed only at
    # interpreter exit, can abort in gloo's threads after training ended.
    dist.barrier()
    del model, optimiser
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
