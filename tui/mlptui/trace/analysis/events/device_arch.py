"""Who made the device and which architecture it is, in the vendor's own words.

    device_arch(device, meta) -> DeviceArch

NVIDIA: `sm_90` from `computeMajor`/`computeMinor`, compute units are SMs. AMD (ROCm/HIP): the torch
profiler fills the same deviceProperties fields, but `computeMajor` 9 means gfx9, not Hopper; the
architecture is `gcnArchName` when recorded (gfx90a, gfx942, feature flags after ':' dropped), else the
product line's known gfx target, else `gfx9 (HIP 9.4)`; compute units are CUs. AMD is recognised by
`gcnArchName`, its names (AMD, Instinct, Radeon), 64-wide warps, or the HIP/roctracer versions in the
trace's metadata, so an empty device name still reads right.
"""

from __future__ import annotations

from typing import Any

from mlptui.trace.reports.common import DeviceArch as DeviceArch  # as this module computes it

# Product -> gfx target, for traces whose deviceProperties lack gcnArchName (most torch versions).
_AMD_TARGETS: tuple[tuple[str, str], ...] = (
    ("MI355", "gfx950"), ("MI350", "gfx950"), ("MI325", "gfx942"), ("MI300", "gfx942"),
    ("MI250", "gfx90a"), ("MI210", "gfx90a"), ("MI100", "gfx908"), ("MI50", "gfx906"), ("MI60", "gfx906"),
)
_AMD_META_KEYS = ("hip_runtime_version", "hip_driver_version", "roctracer_version", "rocprofiler_version")


def _is_amd(device: dict[str, Any], meta: dict[str, Any]) -> bool:
    name = str(device.get("name") or "")
    return (bool(device.get("gcnArchName")) or any(w in name for w in ("AMD", "Instinct", "Radeon"))
            or device.get("warpSize") == 64 or any(meta.get(k) for k in _AMD_META_KEYS))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def device_arch(device: dict[str, Any] | None, meta: dict[str, Any] | None = None) -> DeviceArch:
    meta = meta or {}
    if not device:
        vendor = "AMD" if any(meta.get(k) for k in _AMD_META_KEYS) else "unknown"
        return DeviceArch(vendor=vendor, arch=None, units="units", count=None)
    count = _int(device.get("numSms"))
    major, minor = _int(device.get("computeMajor")), _int(device.get("computeMinor"))
    if _is_amd(device, meta):
        gcn = str(device.get("gcnArchName") or "").split(":", 1)[0].strip()
        if not gcn:
            name = str(device.get("name") or "")
            gcn = next((target for product, target in _AMD_TARGETS if product in name), "")
        if not gcn and major is not None:
            gcn = f"gfx{major} (HIP {major}.{minor or 0})"
        return DeviceArch(vendor="AMD", arch=gcn or None, units="CUs", count=count)
    if major is not None:
        return DeviceArch(vendor="NVIDIA", arch=f"sm_{major}{minor or 0}", units="SMs", count=count)
    return DeviceArch(vendor="unknown", arch=None, units="units", count=count)


def device_label(device: dict[str, Any] | None, meta: dict[str, Any] | None = None) -> str:
    """The device in one line from what the trace's header says: `AMD Instinct MI300X, AMD gfx942, 304
    CUs`, `NVIDIA H100 80GB HBM3, sm_90, 132 SMs`; a device the header leaves unnamed is named by its
    vendor and architecture (`AMD gfx942, 304 CUs`), one it does not describe says so."""
    info = device_arch(device, meta)
    name = str((device or {}).get("name") or "").strip()
    arch = f"AMD {info.arch}" if info.vendor == "AMD" and info.arch else info.arch
    if not name and not arch and info.vendor != "unknown":
        arch = f"{info.vendor} GPU"
    parts = [p for p in (name, arch) if p]
    if info.count:
        parts.append(f"{info.count} {info.units}")
    return ", ".join(parts) if parts else "not described in the trace (no deviceProperties)"
