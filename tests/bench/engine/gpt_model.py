"""A GPT-2-shaped model as a sequence of top-level children, for the engine-vs-DDP benchmarks.

Child 0 embeds tokens and positions, children 1..L are pre-LN transformer blocks, the last
child is the final LayerNorm and the LM head, returning logits as [batch, vocab, seq] so that
cross_entropy(logits, targets [batch, seq]) is the next-token loss in the engine (which
trains a TorchScript module's children in sequence) and in PyTorch alike.
GPT-2 small is d_model 768, 12 heads, 12 layers, seq 1024, vocab 50257; the benchmarks
override the depth, sequence length and vocabulary to fit a CPU.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Embed(nn.Module):
    def __init__(self, vocab: int, d: int, seq: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.size(1), device=x.device)
        return self.tok(x) + self.pos(positions).unsqueeze(0)


class Block(nn.Module):
    def __init__(self, d: int, heads: int, seq: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, s, h, d // h).transpose(1, 2)
        k = k.view(b, s, h, d // h).transpose(1, 2)
        v = v.view(b, s, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h) + self.mask[:s, :s]
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Head(nn.Module):
    def __init__(self, d: int, vocab: int):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.lm = nn.Linear(d, vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm(self.ln(x)).transpose(1, 2)  # [batch, vocab, seq]


def gpt(layers: int, d: int, heads: int, seq: int, vocab: int, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(Embed(vocab, d, seq), *[Block(d, heads, seq) for _ in range(layers)], Head(d, vocab))


def data(samples: int, seq: int, vocab: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (samples, seq + 1), generator=g)
    return ids[:, :seq].contiguous(), ids[:, 1:].contiguous()
