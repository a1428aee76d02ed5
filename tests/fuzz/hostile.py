"""Hand-built hostile traces: one per known hostile input (the fuzz seeds and the regression tests
both use them). `cases()` maps a name to the file's bytes."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

DEVICE = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85031714816, "computeMajor": 9,
          "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
          "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
          "sharedMemPerMultiprocessor": 233472, "numSms": 132, "sharedMemPerBlockOptin": 232448}


def events(kernel_name: str = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
           kernel_args: dict | None = None, op_args: dict | None = None, op_name: str = "aten::addmm") -> list[dict]:
    """A one-step trace: ProfilerStep#1 > aten::linear > aten::addmm > cudaLaunchKernel -> a kernel."""
    kargs = {"correlation": 7, "External id": 3, "grid": [4, 1, 1], "block": [128, 1, 1],
             "registers per thread": 128, "shared memory": 49152, **(kernel_args or {})}
    oargs = {"External id": 3, "Input Dims": [[64, 128], [64, 32], [32, 128]],
             "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"], **(op_args or {})}
    return [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 1, "dur": 50,
         "args": {"External id": 2}},
        {"ph": "X", "cat": "cpu_op", "name": op_name, "pid": 1, "tid": 1, "ts": 2, "dur": 40, "args": oargs},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3, "dur": 5,
         "args": {"correlation": 7, "External id": 3}},
        {"ph": "X", "cat": "kernel", "name": kernel_name, "pid": 0, "tid": 7, "ts": 10, "dur": 20, "args": kargs},
    ]


def doc(evs: list | None = None, device: object = DEVICE, **top: object) -> dict:
    evs = events() if evs is None else evs
    if evs and evs[-1] == ODD:      # first, so that the fast parser gives up before it meets the rest
        return {"traceEvents": [ODD, *evs[:-1]], "schemaVersion": 1, "deviceProperties": [device], **top}
    return {"schemaVersion": 1, "deviceProperties": [device], **top, "traceEvents": evs}


ODD = {"ph": 5}     # an event of the wrong type sends the load through the tolerant (stdlib) parser


def dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _splice(data: dict, marker: str, raw: str) -> bytes:
    return dumps(data).replace(json.dumps(marker).encode(), raw.encode())


def deep(n: int) -> str:
    return "[" * n + "]" * n


def cases() -> dict[str, bytes]:
    odd = ODD
    c: dict[str, bytes] = {}
    # 1. nesting
    c["nested-args-1000"] = _splice(doc(events(kernel_args={"x": "@@"})), "@@", deep(1000))
    c["nested-args-100000"] = _splice(doc(events(kernel_args={"x": "@@"})), "@@", deep(100_000))
    c["nested-args-300"] = _splice(doc(events(op_args={"x": "@@"})), "@@", deep(300))
    c["nested-args-300-tolerant"] = _splice(doc(events(op_args={"x": "@@"}) + [odd]), "@@", deep(300))
    c["nested-invalid-utf8-1000"] = _splice(doc(events(op_name="a\udcff") + [{"ph": "X", "zz": "@@"}]), "@@",
                                            deep(1000)).replace(b"\\udcff", b"\xff")
    c["nested-event-field-1000"] = _splice(doc(events() + [{"ph": "X", "zz": "@@"}]), "@@", deep(1000))
    # 2. lone surrogates (kept only by the stdlib parser: the odd event sends the load there)
    c["surrogate-name"] = dumps(doc(events(kernel_name="gemm\ud800x", op_name="aten::\udfffmm") + [odd]))
    c["surrogate-number"] = dumps(doc([*events(), {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
                                                  "ts": "\ud800", "dur": "\udc00"}, odd]))
    c["surrogate-device"] = dumps(doc(events() + [odd], device={**DEVICE, "name": "H\ud800"}))
    # 3. integers wider than 64 bits
    c["bigint-device"] = dumps(doc(events() + [odd], device={**DEVICE, "totalGlobalMem": 2**80, "extra": -2**70}))
    c["bigint-device-fast"] = dumps(doc(device={**DEVICE, "totalGlobalMem": 2**80}))
    # 4. nesting beyond orjson's 255 in deviceProperties
    c["nested-device-300"] = _splice(doc(device={**DEVICE, "x": "@@"}), "@@", deep(300))
    c["nested-device-300-tolerant"] = _splice(doc(events() + [odd], device={**DEVICE, "x": "@@"}), "@@", deep(300))
    # 5. device fields of the wrong type
    c["device-name-not-str"] = dumps(doc(device={**DEVICE, "name": 42}))
    c["device-name-list"] = dumps(doc(device={**DEVICE, "name": ["H100"]}))
    c["device-mem-str"] = dumps(doc(device={**DEVICE, "totalGlobalMem": "80GB", "numSms": "x"}))
    c["device-inf"] = _splice(doc(events() + [odd], device={**DEVICE, "numSms": "@@", "computeMajor": "@@"}),
                              "@@", "1e999")
    c["device-nan"] = dumps(doc(events() + [odd], device={**DEVICE, "numSms": float("nan")}))
    # 6. kernel launch fields of the wrong type or infinite
    c["kernel-smem-str"] = dumps(doc(events(kernel_args={"shared memory": "lots"})))
    c["kernel-regs-str"] = dumps(doc(events(kernel_args={"registers per thread": "many"})))
    c["kernel-regs-inf"] = _splice(doc(events(kernel_args={"registers per thread": "@@", "shared memory": "@@"})),
                                   "@@", "1e999")
    c["kernel-regs-inf-tolerant"] = _splice(
        doc(events(kernel_args={"registers per thread": "@@", "shared memory": "@@"}) + [odd]), "@@", "-1e999")
    c["kernel-regs-nan"] = dumps(doc(events(kernel_args={"registers per thread": float("nan")}) + [odd]))
    c["kernel-grid-huge"] = dumps(doc(events(kernel_args={"grid": [2**62, 2**62, 2**62], "block": [0, -1, 5]})))
    # 7. an op's Input Dims that is not a list
    c["input-dims-int"] = dumps(doc(events(op_args={"Input Dims": 5})))
    c["input-dims-str"] = dumps(doc(events(op_args={"Input Dims": "[[64, 128]]", "Input type": "float"})))
    c["input-dims-dict"] = dumps(doc(events(op_args={"Input Dims": {"a": [1]}})))
    c["input-dims-huge"] = dumps(doc(events(op_args={"Input Dims": [[2**62, 2**62], [2**62, 2**62], [2**40]]})))
    # a GEMM of no work (a zero dimension): its roofline has no roof to divide by
    c["roofline-zero-work"] = dumps(doc(events(op_args={"Input Dims": [[128], [64, 0], [0, 128]]})))
    # found by the fuzz target in code merged later: a memory event's infinite size, a pid beyond int64
    c["memory-total-inf"] = _splice(doc([*events(), {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]",
                                                     "pid": 1, "tid": 1, "ts": 5, "s": "t",
                                                     "args": {"Total Allocated": "@@", "Bytes": "@@"}}, ODD]),
                                    "@@", "1e999")
    c["pid-beyond-int64"] = dumps(doc([*events()[:-1], {**events()[-1], "pid": 2**63 + 5}]))
    # ... an External id beyond int64 on an event before one that has no args at all
    argless = events(op_args={"External id": -(10**20)})
    argless[-1] = {k: v for k, v in argless[-1].items() if k != "args"}
    c["external-id-beyond-int64-then-no-args"] = dumps(doc(argless))
    # cost: long upper-case kernel names, leading whitespace
    c["long-upper-name-80k"] = dumps(doc(events(kernel_name="A" * 80_000)))
    c["long-name-1m"] = dumps(doc(events(kernel_name="void at::native::" + "AB1" * 350_000)))
    c["leading-whitespace-8k"] = b" " * 8192 + b"\n\t\r" * 100 + dumps(doc())
    c["bom"] = b"\xef\xbb\xbf" + dumps(doc())
    # control characters in names reach the terminal only as escapes
    c["control-names"] = dumps(doc(events(kernel_name="\x1b]0;pwned\x07\x1b[2J\x9b31mkernel\nforged line",
                                          op_name="aten::\x1b[31mred\r")))
    # names that read as Textual or Rich markup (a closing tag with nothing to close stopped the explorer)
    marked = events(kernel_name="ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn[/][b]x\\",
                    op_name="evil[/]op[@click=app.quit]q\\[b]", op_args={"[b]key[/b]": "[/]value\\"})
    marked[0] = {**marked[0], "name": "ProfilerStep#1 [/][link=x]"}
    c["markup-names"] = dumps(doc(marked, device={**DEVICE, "name": "H100 [/][b]"}))
    # a small gzip file that inflates far beyond what a trace of its size holds
    c["gzip-bomb-objects"] = gzip.compress(b'{"traceEvents":[' + b"{}," * 3_000_000 + b"{}]}", 9)
    # process and stream ids wider than int64 (a GPU op on "device" 2**64-1)
    wide = events()
    wide[-1] = {**wide[-1], "pid": (1 << 64) - 1, "tid": (1 << 63)}
    wide[0] = {**wide[0], "pid": (1 << 64) - 2}
    c["ids-wider-than-int64"] = dumps(doc(wide))
    # memory events whose numbers are not finite (NaN, infinity) or not numbers
    mem = {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 4,
           "args": {"Total Allocated": "@@", "Bytes": "@@", "Device Id": "@@", "Total Reserved": "@@"}}
    c["memory-event-nan"] = _splice(doc(events() + [mem] + [odd]), "@@", "NaN")
    c["memory-event-inf"] = _splice(doc(events() + [mem] + [odd]), "@@", "Infinity")
    # GPU events and no CPU event at all: every profiler view must still open (grouping by op included)
    c["gpu-events-only"] = b'{"traceEvents":[{"ph":"X","cat":"kernel","ts":1,"dur":1,"pid":0,"tid":7,"name":"k"}]}'
    return c


def gzip_bomb(compressed_bytes: int = 1 << 20, unit: bytes = b" ") -> bytes:
    """About `compressed_bytes` of gzip that inflates ~1000x (`unit` repeated inside a valid document),
    compressed as a stream so that the inflated form never sits in memory here."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(b'{"traceEvents":[')]
    block = unit * ((1 << 20) // len(unit))
    size = 0
    while size < compressed_bytes:
        piece = z.compress(block)
        out.append(piece)
        size += len(piece)
    out.append(z.compress(b"{}]}") + z.flush())
    return b"".join(out)


def write_hostile(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in cases().items():
        (folder / f"hostile-{name}.json").write_bytes(data)
    return len(cases())
