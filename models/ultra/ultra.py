"""ULTRA / UltraQuery in plain PyTorch (no torch_scatter, no custom kernels).

The module and parameter names match the released checkpoints so that
`load_state_dict(strict=True)` works:

    relation_model.layers.{i}.{linear,layer_norm,relation}
    entity_model.layers.{i}.{linear,layer_norm,relation_projection.{0,2}}
    entity_model.mlp.{0,2}

Conventions (see README.md, "ONNX contract"):
  * message edges are given as (src, dst, type); a message travels FROM src
    and is summed INTO dst.  For a KG fact (h, r, t) with R direct relations
    the entity graph has the edges (src=t, dst=h, type=r) and
    (src=h, dst=t, type=r+R).
  * relation graph: nodes are the 2R relations, 4 edge types
    (0 hh, 1 tt, 2 ht, 3 th), see `build_relation_graph`.

Every layer computes
    msg   = x[:, src, :] * rel[:, type, :]              (DistMult)
    agg   = boundary + scatter_add(msg, dst)              (sum, boundary self-loop)
    out   = ReLU(LayerNorm(Linear(cat[x, agg])))
    x'    = out + x                                       (shortcut)
"""

from __future__ import annotations

import os
import warnings
from typing import Dict, Iterable, List, Sequence, Tuple

import torch
from torch import nn

DIM = 64
NUM_LAYERS = 6
LN_EPS = 1e-5
CHECKPOINTS = ("ultra_3g", "ultra_4g", "ultra_50g", "ultraquery")


def _layer_norm(x: torch.Tensor, ln: nn.LayerNorm) -> torch.Tensor:
    # Written out so that the ONNX graph only uses ReduceMean/Sub/Mul/Add/Sqrt/Div
    # (identical to nn.LayerNorm: biased variance, eps inside the sqrt).
    mean = x.mean(dim=-1, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dim=-1, keepdim=True)
    return xc / torch.sqrt(var + ln.eps) * ln.weight + ln.bias


def _propagate(x: torch.Tensor, rel: torch.Tensor, boundary: torch.Tensor,
               src: torch.Tensor, dst: torch.Tensor, typ: torch.Tensor) -> torch.Tensor:
    """boundary + sum over edges of x[:, src] * rel[:, type], scattered into dst.

    x, boundary: [B, N, D]; rel: [B, K, D]; src/dst/typ: [E] int64.
    """
    msg = x.index_select(1, src) * rel.index_select(1, typ)  # [B, E, D]
    if torch.onnx.is_in_onnx_export():
        index = dst.view(1, -1, 1).expand_as(msg)
        return boundary.scatter_add(1, index, msg)  # ScatterElements(reduction="add")
    return boundary.index_add(1, dst, msg)


class GroupedEdges:
    """Faster eager message passing for large graphs (used by eval_codex.py).

    DistMult messages factor per (type, dst) group, because the relation vector
    does not depend on the node:  sum_{e: dst=v, type=k} x[src_e] * rel[k]
    = rel[k] * (A_k x)[v].  A is a sparse [groups, N] matrix, so the big
    [B, E, D] gather is replaced by a sparse matmul with far fewer rows.
    """

    def __init__(self, src, dst, typ, num_nodes: int):
        key = typ * num_nodes + dst
        uniq, inv = torch.unique(key, return_inverse=True)
        self.gtyp = uniq // num_nodes
        self.gdst = uniq % num_nodes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = torch.sparse_coo_tensor(torch.stack([inv, src]), torch.ones(len(src)),
                                        (len(uniq), num_nodes)).coalesce()
            self.a = a.to_sparse_csr()

    def propagate(self, x, rel, boundary):
        bsz, n, d = x.shape
        xs = x.permute(1, 0, 2).reshape(n, bsz * d)
        s = (self.a @ xs).view(-1, bsz, d)  # [G, B, D]
        s = s * rel.index_select(1, self.gtyp).permute(1, 0, 2)
        out = boundary.permute(1, 0, 2).index_add(0, self.gdst, s)
        return out.permute(1, 0, 2)


class RelationalConv(nn.Module):
    """One GeneralizedRelationalConv layer (DistMult, sum, LayerNorm, ReLU)."""

    def __init__(self, dim: int = DIM, num_relation: int = 4, project_relations: bool = False):
        super().__init__()
        self.project_relations = project_relations
        self.linear = nn.Linear(2 * dim, dim)
        self.layer_norm = nn.LayerNorm(dim, eps=LN_EPS)
        if project_relations:
            self.relation_projection = nn.Sequential(
                nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        else:
            self.relation = nn.Embedding(num_relation, dim)

    def relations(self, batch_size: int, rel_reps: torch.Tensor | None) -> torch.Tensor:
        if self.project_relations:
            return self.relation_projection(rel_reps)  # [B, NR, D]
        return self.relation.weight.unsqueeze(0)  # [1, 4, D] (broadcasts over B)

    def forward(self, x, boundary, src, dst, typ, rel_reps=None, plan=None):
        rel = self.relations(x.shape[0], rel_reps)
        if plan is not None:
            agg = plan.propagate(x, rel, boundary)
        else:
            agg = _propagate(x, rel, boundary, src, dst, typ)
        out = self.linear(torch.cat([x, agg], dim=-1))
        out = _layer_norm(out, self.layer_norm)
        return torch.relu(out)


class RelNBFNet(nn.Module):
    """NBFNet over the relation graph; returns [B, NR, D] relation representations."""

    def __init__(self, dim: int = DIM, num_layers: int = NUM_LAYERS):
        super().__init__()
        self.dim = dim
        self.layers = nn.ModuleList(
            [RelationalConv(dim, 4, project_relations=False) for _ in range(num_layers)])

    def forward(self, boundary: torch.Tensor, rel_src, rel_dst, rel_type) -> torch.Tensor:
        # boundary: [B, NR] one-hot of the conditioning relation; query = all-ones.
        ones = torch.ones(self.dim, dtype=boundary.dtype, device=boundary.device)
        b = boundary.unsqueeze(-1) * ones  # [B, NR, D]
        x = b
        for layer in self.layers:
            x = layer(x, b, rel_src, rel_dst, rel_type) + x
        return x


class EntityNBFNet(nn.Module):
    """Query-conditioned NBFNet over the entity graph (QueryNBFNet form)."""

    def __init__(self, dim: int = DIM, num_layers: int = NUM_LAYERS):
        super().__init__()
        self.dim = dim
        self.layers = nn.ModuleList(
            [RelationalConv(dim, project_relations=True) for _ in range(num_layers)])
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, 1))

    def forward(self, h_prob, query, rel_reps, edge_src, edge_dst, edge_type,
                plan: "GroupedEdges | None" = None) -> torch.Tensor:
        # h_prob [B, N], query [B, D], rel_reps [B, NR, D] -> logits [B, N]
        # `plan` (optional, eager only): a GroupedEdges built from the same edges,
        # a faster but mathematically identical way to run the message passing.
        b = h_prob.unsqueeze(-1) * query.unsqueeze(1)  # [B, N, D]
        x = b
        for layer in self.layers:
            x = layer(x, b, edge_src, edge_dst, edge_type, rel_reps, plan) + x
        node_query = query.unsqueeze(1).expand_as(x)
        return self.mlp(torch.cat([x, node_query], dim=-1)).squeeze(-1)


class Ultra(nn.Module):
    def __init__(self, dim: int = DIM, num_layers: int = NUM_LAYERS):
        super().__init__()
        self.relation_model = RelNBFNet(dim, num_layers)
        self.entity_model = EntityNBFNet(dim, num_layers)

    @torch.no_grad()
    def relation_reps(self, cond: torch.Tensor, num_rel: int, rel_graph) -> torch.Tensor:
        """cond: [B] conditioning relations -> [B, NR, D]."""
        boundary = torch.zeros(len(cond), num_rel)
        boundary[torch.arange(len(cond)), cond] = 1.0
        return self.relation_model(boundary, *rel_graph)


# ---------------------------------------------------------------- checkpoints

def load_state_dict(path: str) -> Dict[str, torch.Tensor]:
    sd = torch.load(path, map_location="cpu", weights_only=False)
    if isinstance(sd, dict) and "model" in sd and isinstance(sd["model"], dict):
        sd = sd["model"]
    out = {}
    for k, v in sd.items():
        while k.startswith("model."):  # ultraquery: model.model.relation_model...
            k = k[len("model."):]
        out[k] = v.float()
    return out


def load_model(path: str) -> Ultra:
    model = Ultra()
    model.load_state_dict(load_state_dict(path), strict=True)
    model.eval()
    return model


def checkpoint_path(ckpt_dir: str, name: str) -> str:
    return os.path.join(ckpt_dir, f"{name}.pth")


# ---------------------------------------------------------------- graphs

def entity_edges(triples: Sequence[Tuple[int, int, int]], num_rel: int):
    """Message edges (src, dst, type) for direct triples (h, r, t), r < R=num_rel.

    First all (t -> h, r) edges in triple order, then all (h -> t, r + R).
    """
    t = torch.as_tensor(triples, dtype=torch.long).view(-1, 3)
    h, r, tt = t[:, 0], t[:, 1], t[:, 2]
    src = torch.cat([tt, h])
    dst = torch.cat([h, tt])
    typ = torch.cat([r, r + num_rel])
    return src, dst, typ


def build_relation_graph(edge_src, edge_dst, edge_type, num_nodes: int, num_rel2: int):
    """Relation graph of ULTRA (4 edge types) from the entity message edges.

    In ULTRA's edge_index an edge column is (dst, src): H(e) = relations x with
    e as dst of an x-edge, T(e) = relations x with e as src of an x-edge.
    Edge (dst=x, src=y, type) exists iff some entity e has
      0: x in H(e), y in H(e)   1: x in T(e), y in T(e)
      2: x in H(e), y in T(e)   3: x in T(e), y in H(e)
    Returned sorted by (type, dst, src).
    """
    def incidence(ent):
        m = torch.zeros(num_nodes, num_rel2, dtype=torch.float32)
        m[ent, edge_type] = 1.0
        return m

    eh = incidence(edge_dst)  # [N, NR]
    et = incidence(edge_src)
    srcs, dsts, types = [], [], []
    for k, (a, b) in enumerate(((eh, eh), (et, et), (eh, et), (et, eh))):
        adj = (a.t() @ b) > 0  # [NR(x), NR(y)]
        x, y = adj.nonzero(as_tuple=True)  # row-major: sorted by (x, y)
        dsts.append(x)
        srcs.append(y)
        types.append(torch.full_like(x, k))
    return torch.cat(srcs), torch.cat(dsts), torch.cat(types)


def read_triples(path: str) -> List[Tuple[str, str, str]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                out.append((parts[0], parts[1], parts[2]))
    return out
