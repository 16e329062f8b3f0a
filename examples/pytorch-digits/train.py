#!/usr/bin/python3
"""Data-parallel training of a small classifier on the digits data.

Each rank trains on its own shard (DistributedSampler) and DDP averages
gradients over gloo, so every rank ends with the same weights. The
rendezvous comes from the environment, as Kubeflow and gantry set it:
MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (a single process when absent).
Across hosts set GLOO_SOCKET_IFNAME to the interface of the cluster
network. Everything is seeded: the same world size gives the same weights.

Each rank prints its rank, world size and host address, the loss of every
epoch (averaged over all ranks), a checksum of the final weights (all-reduced,
and checked equal on every rank) and the test accuracy. Rank 0 saves the
model as TorchScript (model.pt) to --output-dir (default $OUTPUT_DIR) for
evaluate.py and gantry-model-server and, with --tensorboard-dir, writes each
epoch's loss and test accuracy there as TensorBoard event files
(tfevents.py), which gantry shows as the job's training curves
(spec.tensorboard).
"""
import argparse
import datetime
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from digits import MODEL_FILE, accuracy, load_split, make_model
from tfevents import SummaryWriter


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--output-dir", default=os.environ.get("OUTPUT_DIR"),
                   help="where rank 0 saves the model (default $OUTPUT_DIR)")
    p.add_argument("--timeout-s", type=int, default=120,
                   help="how long to wait for the other ranks")
    p.add_argument("--tensorboard-dir",
                   help="where rank 0 writes loss and accuracy as TensorBoard event files")
    return p.parse_args()


def host_address(master_addr, master_port):
    """The local address this host reaches the master from (no packet sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((master_addr, int(master_port)))
            return s.getsockname()[0]
        except OSError:
            return socket.gethostbyname(socket.gethostname())


def weight_checksum(model):
    return sum(p.detach().double().sum().item() for p in model.parameters())


def main():
    args = parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # deterministic, and fair to the other ranks on one machine

    addr = host_address(os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
    print(f"rank={rank} world_size={world} host={socket.gethostname()} address={addr} "
          f"master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    started = time.monotonic()
    dist.init_process_group("gloo", init_method="env://", world_size=world, rank=rank,
                            timeout=datetime.timedelta(seconds=args.timeout_s))

    x_train, y_train, x_test, y_test = load_split()
    train = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = DistributedDataParallel(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    writer = SummaryWriter(args.tensorboard_dir) if rank == 0 and args.tensorboard_dir else None

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(2, dtype=torch.float64)  # loss sum, samples
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += torch.tensor([loss.item() * len(yb), len(yb)], dtype=torch.float64)
        dist.all_reduce(total)
        epoch_loss = total[0].item() / total[1].item()
        print(f"rank={rank} epoch={epoch + 1} loss={epoch_loss:.4f}", flush=True)
        if writer:
            writer.add_scalar("loss", epoch_loss, epoch + 1)
            writer.add_scalar("accuracy", accuracy(model.module, x_test, y_test), epoch + 1)

    local = weight_checksum(model.module)
    sums = torch.tensor([local, local, -local], dtype=torch.float64)
    dist.all_reduce(sums[:1])
    dist.all_reduce(sums[1:], op=dist.ReduceOp.MAX)  # max and -min: equal iff all agree
    checksum = sums[0].item() / world
    agree = abs(sums[1].item() + sums[2].item()) < 1e-9
    acc = accuracy(model.module, x_test, y_test)
    print(f"rank={rank} checksum={checksum:.6f} ranks_agree={agree} "
          f"test_accuracy={acc:.4f} seconds={time.monotonic() - started:.1f}", flush=True)

    if rank == 0 and args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        # TorchScript: loadable without this code (torch.jit.load), as
        # gantry-model-server serves it
        torch.jit.save(torch.jit.script(model.module), os.path.join(args.output_dir, MODEL_FILE))
        with open(os.path.join(args.output_dir, "metrics.json"), "w") as f:
            json.dump({"world_size": world, "epochs": args.epochs, "checksum": checksum,
                       "test_accuracy": acc}, f)
        print(f"rank=0 saved {os.path.join(args.output_dir, MODEL_FILE)}", flush=True)
    if writer:
        writer.close()
    dist.barrier()
    dist.destroy_process_group()
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
