"""Align two GPU work streams (kernels, memsets, memcpys of one step each) into diff rows.

Three passes, each only over what the previous one left unmatched:
1. exact: a longest-common-subsequence alignment on raw names, weighted so that a kernel match
   always outweighs a memset/memcpy match (memsets are all called `Memset (Device)`: they must
   follow the kernels, never pull the kernel alignment out of place);
2. fused: a kernel on one side whose op words cover a run of unmatched kernels near it on the
   other side (`triton_poi_fused__unsafe_view_gelu_mul_0` <= the eager gelu and mul kernels), and a
   fused attention kernel for the kernels of the attention it replaces (`attention_rows`);
3. loose: between consecutive exact matches, the same alignment on role (family, launching op,
   op words) pairs the rest as `changed` (another tile, another library, another GPU's GEMM).
Whatever is left is `removed` (A only) or `added` (B only).

The alignment is a dynamic program over the whole step, row by row in numpy; long inputs are cut
at items that occur once on each side (patience anchors) so memory stays bounded. Scores come row by
row from mlptui.trace.diff.scores, never from a matrix of every class against every class, and a gap
with too many distinct role keys to score each pair is scored on coarser keys: time and memory grow
with the kernels and their distinct names, not with the square of the names
(benchmarks/bench_diff_names.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlptui.trace.diff.scores import Scores

SAME, CHANGED, ADDED, REMOVED, FUSED = "same", "changed", "added", "removed", "fused"
STATUSES = (SAME, CHANGED, ADDED, REMOVED, FUSED)

KERNEL, MEMSET, MEMCPY = "kernel", "memset", "memcpy"

# Largest DP table (cells) aligned in one piece: int32, so 12M cells is 48 MB.
_MAX_CELLS = 12_000_000
# How far (in exact matches) before a fused kernel its constituent kernels may sit on the other side.
_FUSE_BACK_ANCHORS = 6
_FUSE_MAX_DISTANCE = 96
_FUSE_MAX_ITEMS = 8
# Scores of the first alignment: an identical kernel outweighs any two same-role pairs; a memset or
# memcpy match weighs little, so the many identical `Memset (Device)`s never steer the kernels.
_EXACT_KERNEL, _EXACT_OTHER, _ROLE_CAP = 8, 2, 3
_MAX_ROLE_PAIRS = 250_000
_ROLE_BY_FAMILY = frozenset({"gemm", "attention", "norm", "comm"})
RoleKey = tuple[str, str, str, frozenset[str]]     # kind, family, launching op, op words


@dataclass(frozen=True, slots=True)
class AlignItem:
    """One unit of GPU work as the aligner sees it."""

    name: str                           # raw kernel name
    kind: str = KERNEL                  # KERNEL, MEMSET or MEMCPY
    family: str = "other"               # decoded family (gemm, pointwise, ...)
    words: frozenset[str] = frozenset()  # op words (mlptui.trace.diff.tokens)
    role: str = ""                      # name of the innermost CPU op that launched it
    fusable: bool = False               # may stand for several kernels of the other side
    dur: float = 0.0
    ref: int = -1                       # GpuOp id in its trace
    under_attention: bool = False       # launched beneath an attention op (attention_fuse)


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the diff: indices into the A and B item lists."""

    status: str
    a: tuple[int, ...]
    b: tuple[int, ...]


def align(a: Sequence[AlignItem], b: Sequence[AlignItem]) -> list[Row]:
    """Diff rows in stream order for two item lists."""
    pairs = _exact_pairs(a, b)
    pair_of_a = {i: j for i, j in pairs}
    pair_of_b = {j: i for i, j in pairs}
    rows: list[Row] = [Row(SAME, (i,), (j,)) for i, j in pairs]

    used_a = set(pair_of_a)
    used_b = set(pair_of_b)
    anchors_a = [i for i, _ in pairs]
    anchors_b = [j for _, j in pairs]
    rows += _fused_rows(b, a, anchors_b, anchors_a, used_b, used_a, b_side=True)
    rows += _fused_rows(a, b, anchors_a, anchors_b, used_a, used_b, b_side=False)
    rows += attention_rows(b, a, anchors_b, anchors_a, used_b, used_a, b_side=True)
    rows += attention_rows(a, b, anchors_a, anchors_b, used_a, used_b, b_side=False)

    rows += _loose_rows(a, b, pairs, used_a, used_b)
    rows += [Row(REMOVED, (i,), ()) for i in range(len(a)) if i not in used_a]
    rows += [Row(ADDED, (), (j,)) for j in range(len(b)) if j not in used_b]
    return _order(rows, len(a), len(b))


# ---------------------------------------------------------------- pass 1: exact names

def _exact_pairs(a: Sequence[AlignItem], b: Sequence[AlignItem]) -> list[tuple[int, int]]:
    """Pairs of identically named items. The alignment that picks them also scores same-role pairs
    (a little), so that where the two programs differ, the gaps left between exact matches line up
    GEMM against GEMM rather than wherever a common pointwise kernel happened to match first."""
    classes: dict[tuple[str, str, str, frozenset[str], str], int] = {}
    reps: list[AlignItem] = []

    def code(x: AlignItem) -> int:
        key = (x.kind, x.name, x.role, x.words, x.family)
        c = classes.get(key)
        if c is None:
            c = classes[key] = len(reps)
            reps.append(x)
        return c

    ca = np.fromiter(map(code, a), np.int32, len(a))
    cb = np.fromiter(map(code, b), np.int32, len(b))
    in_a = sorted(set(ca.tolist()))     # not np.unique: its plain form imports numpy.ma
    in_b = sorted(set(cb.tolist()))
    names: dict[tuple[str, str], int] = {}
    same_as = np.fromiter((names.setdefault((x.name, x.kind), len(names)) for x in reps), np.int64, len(reps))
    weight = np.fromiter((_EXACT_KERNEL if x.kind == KERNEL else _EXACT_OTHER for x in reps), np.int32, len(reps))
    if len(in_a) * len(in_b) <= _MAX_ROLE_PAIRS:
        # A role score depends on the role key only, and many classes share one: score each pair of
        # distinct keys once.
        role_a, keys_a = _index_of([_role_key(reps[p]) for p in in_a], in_a, len(reps))
        role_b, keys_b = _index_of([_role_key(reps[q]) for q in in_b], in_b, len(reps))
        table = np.array([[min(_role_score(u, v), _ROLE_CAP) for v in keys_b] for u in keys_a], np.int32)
        scores = Scores(same_as, weight, role_a, role_b, table.reshape(len(keys_a), len(keys_b)))
    else:
        scores = Scores(same_as, weight)
    pairs = _align_codes(ca, cb, scores, 0, 0)
    return [(i, j) for i, j in pairs if a[i].name == b[j].name and a[i].kind == b[j].kind]


def _index_of(keys: list[RoleKey], codes: list[int], n: int) -> tuple[np.ndarray, list[RoleKey]]:
    """For each of n classes, the index of its role key among the distinct `keys` (-1 for a class not
    in `codes`), and those distinct keys."""
    index: dict[RoleKey, int] = {}
    out = np.full(n, -1, np.int64)
    for key, c in zip(keys, codes, strict=True):
        out[c] = index.setdefault(key, len(index))
    return out, list(index)


def _align_codes(ca: np.ndarray, cb: np.ndarray, scores: Scores, oa: int, ob: int) -> list[tuple[int, int]]:
    """Best-scoring monotone pairing of ca and cb (offsets oa/ob added to the indices returned)."""
    n, m = len(ca), len(cb)
    if n == 0 or m == 0 or not scores.any_between(ca, cb):
        return []
    # Common prefix and suffix of identical, scoring items need no DP.
    lo = 0
    while lo < min(n, m) and ca[lo] == cb[lo] and scores.at(ca[lo], cb[lo]) > 0:
        lo += 1
    hi = 0
    while hi < min(n, m) - lo and ca[n - 1 - hi] == cb[m - 1 - hi] and scores.at(ca[n - 1 - hi], cb[m - 1 - hi]) > 0:
        hi += 1
    head = [(oa + k, ob + k) for k in range(lo)]
    tail = [(oa + n - hi + k, ob + m - hi + k) for k in range(hi)]
    ca, cb = ca[lo:n - hi], cb[lo:m - hi]
    oa2, ob2 = oa + lo, ob + lo
    if len(ca) and len(cb):
        if len(ca) * len(cb) <= _MAX_CELLS:
            mid = _dp(ca, cb, scores, oa2, ob2)
        else:
            mid = _split_align(ca, cb, scores, oa2, ob2)
    else:
        mid = []
    return head + mid + tail


def _dp(ca: np.ndarray, cb: np.ndarray, scores: Scores, oa: int, ob: int) -> list[tuple[int, int]]:
    n, m = len(ca), len(cb)
    h = np.zeros((n + 1, m + 1), np.int32)
    rows = scores.rows_for(cb)
    for i in range(1, n + 1):
        row = rows.row(ca[i - 1])
        prev = h[i - 1]
        # H[i][j] = max(H[i-1][j], H[i-1][j-1] + s, H[i][j-1]); the last term is a running max.
        np.maximum.accumulate(np.maximum(prev[1:], prev[:-1] + row), out=h[i, 1:])
    out: list[tuple[int, int]] = []
    i, j = n, m
    hl = h.tolist() if n * m <= 2_000_000 else None
    while i > 0 and j > 0:
        if hl is not None:
            cur, diag, up = hl[i][j], hl[i - 1][j - 1], hl[i - 1][j]
        else:
            cur, diag, up = int(h[i, j]), int(h[i - 1, j - 1]), int(h[i - 1, j])
        s = scores.at(ca[i - 1], cb[j - 1])
        if s > 0 and cur == diag + s:
            out.append((oa + i - 1, ob + j - 1))
            i -= 1
            j -= 1
        elif cur == up:
            i -= 1
        else:
            j -= 1
    out.reverse()
    return out


def _split_align(ca: np.ndarray, cb: np.ndarray, scores: Scores, oa: int, ob: int) -> list[tuple[int, int]]:
    """Cut a too-large problem at anchors: classes occurring exactly once on each side, kept in a
    longest increasing run (patience diff); without any, cut both sides in proportional halves."""
    ua, ia, na = np.unique(ca, return_index=True, return_counts=True)
    ub, ib, nb = np.unique(cb, return_index=True, return_counts=True)
    once_a = dict(zip(ua[na == 1].tolist(), ia[na == 1].tolist(), strict=True))
    once_b = dict(zip(ub[nb == 1].tolist(), ib[nb == 1].tolist(), strict=True))
    cand = sorted((once_a[c], once_b[c]) for c in once_a.keys() & once_b.keys() if scores.at(c, c) > 0)
    anchors = _longest_increasing(cand)
    if not anchors:
        half_a, half_b = len(ca) // 2, len(cb) // 2
        return (_align_codes(ca[:half_a], cb[:half_b], scores, oa, ob)
                + _align_codes(ca[half_a:], cb[half_b:], scores, oa + half_a, ob + half_b))
    out: list[tuple[int, int]] = []
    pa = pb = 0
    for ia_, ib_ in anchors:
        out += _align_codes(ca[pa:ia_], cb[pb:ib_], scores, oa + pa, ob + pb)
        out.append((oa + ia_, ob + ib_))
        pa, pb = ia_ + 1, ib_ + 1
    out += _align_codes(ca[pa:], cb[pb:], scores, oa + pa, ob + pb)
    return out


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest subsequence of pairs (sorted by first) whose second members increase."""
    tails: list[int] = []
    tail_idx: list[int] = []
    back = [-1] * len(pairs)
    for k, (_, y) in enumerate(pairs):
        pos = bisect.bisect_left(tails, y)
        if pos == len(tails):
            tails.append(y)
            tail_idx.append(k)
        else:
            tails[pos] = y
            tail_idx[pos] = k
        back[k] = tail_idx[pos - 1] if pos else -1
    out = []
    k = tail_idx[-1] if tail_idx else -1
    while k >= 0:
        out.append(pairs[k])
        k = back[k]
    out.reverse()
    return out


# ---------------------------------------------------------------- pass 2: fusion

def _fused_rows(side: Sequence[AlignItem], other: Sequence[AlignItem], anchors_side: list[int],
                anchors_other: list[int], used_side: set[int], used_other: set[int],
                b_side: bool) -> list[Row]:
    """Rows where one kernel of `side` stands for several unmatched kernels of `other`."""
    rows: list[Row] = []
    for x, item in enumerate(side):
        if x in used_side or not item.fusable or item.kind != KERNEL or len(item.words) < 2:
            continue
        # The constituents ran before the fused kernel's next exact match, and not too long before.
        k = bisect.bisect_right(anchors_side, x)
        hi = anchors_other[k] if k < len(anchors_other) else len(other)
        gap_lo = anchors_other[k - 1] + 1 if k > 0 else 0
        back = k - 1 - _FUSE_BACK_ANCHORS
        lo = max(anchors_other[back] if back >= 0 else 0, hi - _FUSE_MAX_DISTANCE)
        chosen: list[int] = []
        covered: set[str] = set()
        # Nearest first, walking back from the projected position. Inside the fused kernel's own gap
        # every fitting kernel is taken (a gate/up GEMM pair fused into one); further back only
        # kernels that add a word not covered yet (the gelu of this layer, not of the one before).
        for y in range(hi - 1, lo - 1, -1):
            cand = other[y]
            # A constituent computes part of what the fused kernel does, never all of it.
            if (y in used_other or cand.kind != KERNEL or not cand.words or not cand.words < item.words
                    or (y < gap_lo and cand.words <= covered)):
                continue
            chosen.append(y)
            covered |= cand.words
            if len(chosen) == _FUSE_MAX_ITEMS:
                break
        if len(chosen) < 2 or len(covered) < 2:
            continue
        chosen.sort()
        used_side.add(x)
        used_other.update(chosen)
        rows.append(Row(FUSED, tuple(chosen), (x,)) if b_side else Row(FUSED, (x,), tuple(chosen)))
    return rows


# ---------------------------------------------------------------- pass 2b: fused attention

# Ops under which every kernel computes part of one attention call.
ATTENTION_CALL_OPS = frozenset({"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math"})


def attention_rows(side: Sequence[AlignItem], other: Sequence[AlignItem], anchors_side: list[int],
                   anchors_other: list[int], used_side: set[int], used_other: set[int],
                   b_side: bool) -> list[Row]:
    """The diff's ⊕ for attention: one fused attention kernel (FlashAttention, the memory-efficient
    CUTLASS kernel, cuDNN's) stands for the kernels the other side ran to compute the same attention step
    by step: the other side's unmatched kernels and copies in the fused kernel's gap (between the exact
    matches around it) launched beneath an attention op (`aten::scaled_dot_product_attention` and its
    math decomposition); where none were (attention written by hand from matmul, mask and softmax), every
    unmatched kernel and copy of the gap, provided the gap holds both a GEMM and a softmax."""
    rows: list[Row] = []
    for x, item in enumerate(side):
        if x in used_side or item.kind != KERNEL or item.family != "attention":
            continue
        k = bisect.bisect_right(anchors_side, x)
        lo = anchors_other[k - 1] + 1 if k > 0 else 0
        hi = anchors_other[k] if k < len(anchors_other) else len(other)
        gap = [y for y in range(lo, hi) if y not in used_other and other[y].kind != MEMSET
               and other[y].family != "attention"]
        chosen = [y for y in gap if other[y].under_attention]
        if not chosen:
            has_gemm = any(other[y].family == "gemm" for y in gap)
            has_softmax = any("softmax" in other[y].words or "softmax" in other[y].role for y in gap)
            chosen = gap if has_gemm and has_softmax else []
        if len(chosen) < 2:
            continue
        used_side.add(x)
        used_other.update(chosen)
        rows.append(Row(FUSED, tuple(chosen), (x,)) if b_side else Row(FUSED, (x,), tuple(chosen)))
    return rows


# ---------------------------------------------------------------- pass 3: same role

def _role_key(x: AlignItem) -> RoleKey:
    return (x.kind, x.family, x.role, x.words)


def _role_score(p: RoleKey, q: RoleKey) -> int:
    kind_p, fam_p, role_p, words_p = p
    kind_q, fam_q, role_q, words_q = q
    if kind_p != kind_q:
        return 0
    if kind_p != KERNEL:
        return 1
    if fam_p != fam_q:
        # An Inductor reduction standing for ATen's layer_norm kernel: other family, same ops.
        if "gemm" in (fam_p, fam_q) or not (words_p and words_q):
            return 0
        return 2 if words_p <= words_q or words_q <= words_p else 0
    score = 0
    if role_p and role_p == role_q:
        score += 4
    if words_p and words_p == words_q:
        score += 3
    elif words_p & words_q:
        score += 2
    # Another GPU's or library's GEMM/attention/norm plays the same part even under another op name;
    # two pointwise kernels of different ops do not.
    if score or fam_p in _ROLE_BY_FAMILY:
        score += 1
    return score


def _loose_rows(a: Sequence[AlignItem], b: Sequence[AlignItem], pairs: list[tuple[int, int]],
                used_a: set[int], used_b: set[int]) -> list[Row]:
    rows: list[Row] = []
    bounds = [(-1, -1), *pairs, (len(a), len(b))]
    for (pa, pb), (na, nb) in zip(bounds, bounds[1:], strict=False):
        ga = [i for i in range(pa + 1, na) if i not in used_a]
        gb = [j for j in range(pb + 1, nb) if j not in used_b]
        if not ga or not gb:
            continue
        for coarse in _COARSER:
            ka = [coarse(_role_key(a[i])) for i in ga]
            kb = [coarse(_role_key(b[j])) for j in gb]
            if len(set(ka)) * len(set(kb)) <= _MAX_ROLE_PAIRS:
                break
        keys: dict[RoleKey, int] = {}
        ca = np.fromiter((keys.setdefault(key, len(keys)) for key in ka), np.int32, len(ka))
        cb = np.fromiter((keys.setdefault(key, len(keys)) for key in kb), np.int32, len(kb))
        klist = list(keys)
        role_a, keys_a = _index_of([klist[c] for c in ca.tolist()], ca.tolist(), len(klist))
        role_b, keys_b = _index_of([klist[c] for c in cb.tolist()], cb.tolist(), len(klist))
        table = np.array([[_role_score(u, v) for v in keys_b] for u in keys_a], np.int32)
        table = table.reshape(len(keys_a), len(keys_b))
        # one class per key and no exact match: a key against itself scores its role score
        weight = np.array([table[role_a[c], role_b[c]] if role_a[c] >= 0 and role_b[c] >= 0 else 0
                           for c in range(len(klist))], np.int32)
        scores = Scores(np.arange(len(klist)), weight, role_a, role_b, table)
        for i, j in _align_codes(ca, cb, scores, 0, 0):
            rows.append(Row(CHANGED, (ga[i],), (gb[j],)))
            used_a.add(ga[i])
            used_b.add(gb[j])
    return rows


def _whole(key: RoleKey) -> RoleKey:
    return key


def _without_words(key: RoleKey) -> RoleKey:
    return (key[0], key[1], key[2], frozenset())


def _kind_and_family(key: RoleKey) -> RoleKey:
    return (key[0], key[1], "", frozenset())


# A gap with too many distinct role keys on both sides to score every pair is scored on coarser keys: the
# pairs then grow with the distinct launching ops, or at worst the families, not with the kernel names.
_COARSER = (_whole, _without_words, _kind_and_family)


# ---------------------------------------------------------------- stream order

def _one_to_many(this: tuple[int, ...], that: tuple[int, ...]) -> bool:
    """A fused row placed by its single kernel on this side."""
    return len(this) == 1 and len(that) > 1


def _order(rows: list[Row], n: int, m: int) -> list[Row]:
    """Rows in stream order. A fused row sits where its single kernel is; the kernels it absorbed
    on the other side are skipped where they ran. Removed comes before added within a gap."""
    row_a = [-1] * n
    row_b = [-1] * m
    home_a = [True] * n     # False: this item is shown with a row placed by its other side
    home_b = [True] * m
    for r, row in enumerate(rows):
        for i in row.a:
            row_a[i] = r
        for j in row.b:
            row_b[j] = r
        if row.status == FUSED:
            if len(row.a) > 1:
                for i in row.a:
                    home_a[i] = False
            else:
                for j in row.b:
                    home_b[j] = False
    done = [False] * len(rows)
    out: list[Row] = []
    i = j = 0
    while i < n or j < m:
        while i < n and (done[row_a[i]] or not home_a[i]):
            i += 1
        while j < m and (done[row_b[j]] or not home_b[j]):
            j += 1
        if i >= n and j >= m:
            break
        ra = row_a[i] if i < n else -1
        rb = row_b[j] if j < m else -1
        if ra >= 0 and (ra == rb or not rows[ra].b or rb < 0 or _one_to_many(rows[ra].a, rows[ra].b)):
            pick = ra
        elif rb >= 0 and (not rows[rb].a or ra < 0 or _one_to_many(rows[rb].b, rows[rb].a)):
            pick = rb
        else:
            # Both pointers sit on paired rows that are not the same one: emit the one whose
            # other side comes first; rows are non-crossing so this is rare (fused pairs).
            pick = ra if min(rows[ra].b) <= j else rb
        done[pick] = True
        out.append(rows[pick])
    # Absorbed items whose row never came up (cannot happen with consistent rows) are not dropped.
    out += [rows[r] for r in range(len(rows)) if not done[r]]
    return out
