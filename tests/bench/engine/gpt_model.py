"""The zoo's GPT (hippie-plan models: gpt2-small and its size overrides) in PyTorch, for the
engine-vs-DDP benchmark: the same layers and parameters as the engine's LibTorch builder
(engine/src/models/zoo_transformer_layers.cpp), so both sides train the same model.

Token and learned position embeddings; pre-LN blocks (fused q/k/v projection, causal
attention, a 4 x d_model MLP with tanh GELU); a final LayerNorm and an LM head tied to the
token table (no bias). Initialised as GPT-2: N(0, 0.02), residual projections scaled by
1/sqrt(2 x layers). Logits come out as [batch, vocab, seq] so that
cross_entropy(logits, targets [batch, seq]) is the next-token loss.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

GPT2_INIT_STD = 0.02


class Block(nn.Module):
    def __init__(self, d: int, heads: int, d_ff: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.attn_qkv = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp_fc1 = nn.Linear(d, d_ff)
        self.mlp_fc2 = nn.Linear(d_ff, d)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.heads
        q, k, v = (t.reshape(b, s, h, d // h).transpose(1, 2) for t in self.attn_qkv(x).chunk(3, dim=2))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
        return self.attn_proj((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.mlp_fc2(F.gelu(self.mlp_fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers: int, d: int, heads: int, positions: int, vocab: int):
        super().__init__()
        self.token_embed = nn.Embedding(vocab, d)
        self.position_embed = nn.Embedding(positions, d)
        self.blocks = nn.ModuleList(Block(d, heads, 4 * d) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                std = GPT2_INIT_STD / math.sqrt(2 * layers) if name.endswith(("attn_proj.weight", "mlp_fc2.weight")) else GPT2_INIT_STD
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.token_embed(tokens) + self.position_embed(torch.arange(tokens.size(1))).unsqueeze(0)
        for block in self.blocks:
            x = block(x)
        return (self.ln_f(x) @ self.token_embed.weight.t()).transpose(1, 2)  # tied head, [batch, vocab, seq]


def gpt(layers: int, d: int, heads: int, positions: int, vocab: int, seed: int = 0) -> Gpt:
    torch.manual_seed(seed)
    return Gpt(layers, d, heads, positions, vocab)


def data(samples: int, seq: int, vocab: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (samples, seq + 1), generator=g)
    return ids[:, :seq].contiguous(), ids[:, 1:].contiguous()
