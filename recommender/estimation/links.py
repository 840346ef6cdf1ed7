"""Achievable bandwidth of the links a layout's collectives run over.

Inside a node NVLink at NCCL's measured share of its per-direction rate (or PCIe); between
nodes the node's NICs together, as the instance states them or as is typical for the
fabric kind; and above a pod, the share an oversubscribed aggregation layer leaves a
data-parallel ring (Llama 3's RoCE fabric).
"""

from __future__ import annotations

import math

from recommender.estimation.efficiency import Generation, generation
from recommender.gpus import GpuSpec, IntraNode
from recommender.pricing.offers import Fabric

__all__ = [
    "NET_EFFICIENCY",
    "NVLINK_EFFICIENCY",
    "PCIE_GBS",
    "POD_GPUS",
    "POD_OVERSUBSCRIPTION",
    "cross_pod_factor",
    "link_gbs",
    "node_nic_gbs",
]

# NCCL ring bus bandwidth reaches ~80 % of the NVLink per-direction rate (nccl-tests on
# DGX A100: ~230-240 GB/s of 300)
NVLINK_EFFICIENCY = 0.8
# PCIe Gen4 x16 moves ~22-25 GB/s per direction; NCCL without peer-to-peer bounces through
# host memory (ours: 16 GB/s bus bandwidth for PCIe-only and bridge-paired cards)
PCIE_GBS = 16.0
# Per-GPU NIC: DGX H100 8×400 Gb/s NDR, DGX A100 8×200 Gb/s HDR (NVIDIA DGX datasheets);
# AWS p5 3200 Gbps/8 GPUs, p4d 400 Gbps/8 GPUs (EC2 instance pages); ~80 % achieved (ours)
_NIC_GBITS_NEW, _NIC_GBITS_OLD, _EFA_GBITS_OLD = 400.0, 200.0, 50.0
NET_EFFICIENCY = 0.8
# Plain TCP Ethernet between nodes: ~100 Gb/s per node shared by its GPUs (ours)
ETHERNET_NODE_GBITS = 100.0
# Large clusters span pods: Llama 3's 24K-GPU RoCE fabric has full bisection inside pods of
# 3,072 GPUs and a 1:7 oversubscribed aggregation layer between them (Dubey et al. 2024
# §3.3.1); InfiniBand SuperPODs and EFA UltraClusters are built non-blocking (NVIDIA DGX
# SuperPOD reference architecture; AWS "petabit-scale non-blocking" UltraClusters)
POD_GPUS = 3072
POD_OVERSUBSCRIPTION = 7.0
_OVERSUBSCRIBED = frozenset({Fabric.ROCE, Fabric.ETHERNET})


def link_gbs(
    gpu: GpuSpec,
    *,
    gpus_per_node: int,
    nodes: int,
    link: IntraNode,
    fabric: Fabric,
    fabric_gbps: float | None = None,
) -> tuple[float, float]:
    """Achievable ring bandwidth per GPU, GB/s per direction: inside a node, and for a ring
    that spans the nodes. With one NIC per GPU (rail-optimised), a node receives what it
    lacks through all its NICs at once, so a spanning ring runs at the slower of the GPU's
    own link and the node's aggregate NIC rate: the instance's stated rate (``fabric_gbps``,
    Gbit/s per node, as the feeds give it) or else a typical one for the fabric kind."""
    if link is IntraNode.NVLINK and gpu.interconnect_gbps:
        intra = gpu.interconnect_gbps / 2 * NVLINK_EFFICIENCY
    else:
        intra = PCIE_GBS
    if gpus_per_node <= 1:
        intra = math.inf
    if nodes <= 1:
        return intra, intra
    node = node_nic_gbs(gpu, gpus_per_node=gpus_per_node, fabric=fabric, fabric_gbps=fabric_gbps)
    return intra, min(intra, node)


def node_nic_gbs(
    gpu: GpuSpec, *, gpus_per_node: int, fabric: Fabric, fabric_gbps: float | None = None
) -> float:
    """Achievable rate of a node's NICs together, GB/s per direction: the instance's stated
    rate (Gbit/s per node) or a typical one for the fabric kind."""
    new = generation(gpu) in (Generation.HOPPER, Generation.BLACKWELL)
    if fabric_gbps:
        node_gbits = fabric_gbps
    elif fabric in (Fabric.INFINIBAND, Fabric.ROCE):
        node_gbits = (_NIC_GBITS_NEW if new else _NIC_GBITS_OLD) * gpus_per_node
    elif fabric is Fabric.EFA:
        node_gbits = (_NIC_GBITS_NEW if new else _EFA_GBITS_OLD) * gpus_per_node
    else:
        node_gbits = ETHERNET_NODE_GBITS
    return node_gbits / 8 * NET_EFFICIENCY


def cross_pod_factor(fabric: Fabric, *, gpus: int, ranks: int) -> float:
    """Share of the ring bandwidth a data-parallel group keeps when it crosses pods: each
    pod's uplinks carry one hop of every ring that leaves it, so a ring with r ranks per pod
    runs at min(1, r/oversubscription) of its rate (1 within a pod or on a non-blocking
    fabric)."""
    if fabric not in _OVERSUBSCRIBED or gpus <= POD_GPUS:
        return 1.0
    per_pod = ranks * POD_GPUS / gpus
    return min(1.0, per_pod / POD_OVERSUBSCRIPTION)
