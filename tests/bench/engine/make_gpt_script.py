"""Writes the benchmark GPT as a TorchScript file and a tensor data file for hippie-engine.
Usage: /usr/bin/python3 make_gpt_script.py OUT_DIR LAYERS D_MODEL HEADS SEQ VOCAB SAMPLES"""
import sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
from gpt_model import data, gpt  # noqa: E402

out, layers, d, heads, seq, vocab, samples = sys.argv[1], *map(int, sys.argv[2:8])
torch.jit.script(gpt(layers, d, heads, seq, vocab)).save(f"{out}/gpt.pt")
torch.save(data(samples, seq, vocab), f"{out}/gpt.data")
