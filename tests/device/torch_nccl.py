# torch_nccl.py - real NCCL (PyTorch's) for the device check (tests/device/run.sh).
#   ok:  one process, world size 1: init, an all-reduce, destroy; prints the sum.
#   dup: rank RANK of 2 on the same GPU: NCCL refuses a communicator with the
#        same GPU twice (a real init failure to record).
import os, sys
import torch
import torch.distributed as dist
mode = sys.argv[1]
rank = int(os.environ.get("RANK", "0"))
world = 1 if mode == "ok" else 2
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", os.environ.get("PORT", "29533"))
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", 0))
t = torch.ones(1024, device="cuda") * (rank + 1)
try:
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {rank}: all_reduce sum {t.sum().item():.0f}", flush=True)
except Exception as e:  # the dup case
    print(f"rank {rank}: all_reduce failed: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
    sys.exit(3)
finally:
    try:
        dist.destroy_process_group()
    except Exception:
        pass
