#!/usr/bin/python3
# Diagnostic (not a CTest test): PyTorch's own Gloo all-reduce of 512 KB between 2 CPU ranks
# on 127.0.0.1, each preceded by COMPUTE_MS of matmuls on both ranks (as a tensor-parallel
# forward calls it), in the world group or in a group made by new_group() of the same 2 ranks
# (as the engine's tensor-parallel groups are). Prints the median and largest time of one
# all-reduce after 10 warm-up calls. Needs Debian's python3-torch (/usr/bin/python3).
# Usage: gloo_allreduce.py [COMPUTE_MS=5] [world|subgroup]
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, compute_ms, which):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ.get("MASTER_PORT", "29611")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    group = dist.new_group([0, 1]) if which == "subgroup" else None
    x = torch.randn(131072)  # 512 KB of fp32
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    times = []
    for _ in range(60):
        start = time.perf_counter()
        while (time.perf_counter() - start) * 1e3 < compute_ms:
            a @ b
        t = time.perf_counter()
        dist.all_reduce(x.clone(), group=group)
        times.append((time.perf_counter() - t) * 1e3)
    if rank == 0:
        print(f"{which}: {compute_ms} ms of compute before each: all-reduce of 512 KB median "
              f"{statistics.median(times[10:]):.2f} ms, largest {max(times[10:]):.2f} ms")
    dist.destroy_process_group()


if __name__ == "__main__":
    compute = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    which = sys.argv[2] if len(sys.argv) > 2 else "world"
    mp.spawn(rank_main, args=(compute, which), nprocs=2)
