"""PyTorch DDP on the zoo's GPT (gpt_model.py; the position table has SEQ rows, as the engine's
run with positions=SEQ): NPROCS ranks on 127.0.0.1 (Gloo), the same global batch
and threads per rank as the engine run it is compared with, SGD or Adam. Prints one JSON line:
mean step time over the steps after the first three (the engine's warm-up, planners/common/warmup.h), samples/s, and each rank's peak RSS.
Usage: /usr/bin/python3 ddp_gpt.py NPROCS STEPS GLOBAL_BATCH THREADS OPTIMIZER LAYERS D HEADS SEQ VOCAB"""
import json
import os
import resource
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(__file__))
from gpt_model import data, gpt  # noqa: E402


def rank_main(rank, nprocs, steps, gb, threads, opt, arch, port, results):
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=nprocs)
    layers, d, heads, seq, vocab = arch
    model = DDP(gpt(layers, d, heads, seq, vocab))
    o = torch.optim.SGD(model.parameters(), lr=0.05) if opt == "sgd" else torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs, targets = data(gb * steps, seq, vocab)
    per = gb // nprocs
    times = []
    for step in range(steps):
        lo = step * gb + rank * per
        x, y = inputs[lo:lo + per], targets[lo:lo + per]
        dist.barrier()
        t = time.perf_counter()
        o.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        o.step()
        times.append(time.perf_counter() - t)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    results.put((rank, times, rss, loss.item()))
    dist.destroy_process_group()


if __name__ == "__main__":
    nprocs, steps, gb, threads = map(int, sys.argv[1:5])
    opt = sys.argv[5]
    arch = tuple(map(int, sys.argv[6:11]))
    port = 29000 + os.getpid() % 10000
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, nprocs, steps, gb, threads, opt, arch, port, q)) for r in range(nprocs)]
    for p in procs:
        p.start()
    res = sorted(q.get() for _ in procs)
    for p in procs:
        p.join()
    step_times = [max(r[1][i] for r in res) for i in range(steps)]
    timed = step_times[min(3, steps - 1):] if steps > 1 else step_times
    mean = sum(timed) / len(timed)
    print(json.dumps({"framework": "ddp", "ranks": nprocs, "mean_step_s": mean, "samples_per_s": gb / mean,
                      "peak_rss_bytes": [r[2] for r in res], "loss": res[0][3]}))
