"""Peak bandwidth of the link between the GPUs of one host, to put an achieved bus bandwidth beside.

Figures are per GPU and per direction, GB/s: half of the bidirectional aggregate the vendors print.
NCCL's bus bandwidth counts bytes one way through each GPU, so it is compared with one direction.

| link | GB/s one way | source |
|---|---|---|
| NVLink 5 (B200, GB200) | 900 | NVIDIA DGX B200 datasheet: "1.8 TB/s NVLink bandwidth per GPU" |
| NVLink 4 (H100 SXM, H200) | 450 | NVIDIA H100 and H200 Tensor Core GPU datasheets: "NVLink: 900GB/s" |
| NVLink 3 (A100 SXM) | 300 | NVIDIA A100 Tensor Core GPU datasheet: "NVLink: 600GB/s" |
| NVLink 2 (V100 SXM2) | 150 | NVIDIA Tesla V100 datasheet: "NVLink: 300GB/s" |
| xGMI / Infinity Fabric (MI300X) | 448 | AMD Instinct MI300X data sheet: 7 links, "896 GB/s" aggregate peer-to-peer |
| PCIe 5.0 x16 | 64 | PCI-SIG PCIe 5.0 (32 GT/s × 16 lanes, 128b/130b); H100 PCIe datasheet "128GB/s" |
| PCIe 4.0 x16 | 32 | PCI-SIG PCIe 4.0 (16 GT/s × 16 lanes); A100 PCIe datasheet "64GB/s" |

The link is guessed from the device name (an SXM board talks over NVLink, a PCIe board over PCIe);
a trace of a PCIe host with SXM-named boards would be compared with the wrong row, which the name
of the link printed beside the figure makes visible.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Link:
    name: str
    peak_gbps: float      # per GPU, one direction


NVLINK5 = Link("NVLink 5", 900.0)
NVLINK4 = Link("NVLink 4", 450.0)
NVLINK3 = Link("NVLink 3", 300.0)
NVLINK2 = Link("NVLink 2", 150.0)
XGMI_MI300X = Link("xGMI (MI300X)", 448.0)
PCIE5 = Link("PCIe 5.0 x16", 64.0)
PCIE4 = Link("PCIe 4.0 x16", 32.0)

# (words all found in the lower-cased device name, link); first match wins, so PCIe boards come first
_BY_NAME: tuple[tuple[tuple[str, ...], Link], ...] = (
    (("h100", "pcie"), PCIE5), (("h100", "nvl"), NVLINK4), (("a100", "pcie"), PCIE4),
    (("v100", "pcie"), PCIE4),
    (("b200",), NVLINK5), (("gb200",), NVLINK5), (("h200",), NVLINK4), (("h100",), NVLINK4),
    (("gh200",), NVLINK4), (("h800",), NVLINK4), (("a100",), NVLINK3), (("a800",), NVLINK3),
    (("v100",), NVLINK2), (("mi300x",), XGMI_MI300X),
)


def link_for(device_name: str | None) -> Link | None:
    """The GPU-to-GPU link a device of this name uses, or None when the name says nothing."""
    if not device_name:
        return None
    name = device_name.lower()
    for words, link in _BY_NAME:
        if all(w in name for w in words):
            return link
    return None
