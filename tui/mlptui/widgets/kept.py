"""What a widget keeps of its drawing: a store of the most recently used entries, bounded by count.

An `OrderedDict` rather than Textual's `LRUCache`: these are read on the per-line paint path, where the
dict's own C operations cost less than a Python linked list.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def lru_get_or_make(store: OrderedDict[K, V], key: K, make: Callable[[], V], max_entries: int) -> V:
    """`store[key]`, made by `make` when missing; the store then keeps the `max_entries` most recently
    used."""
    value = store.get(key)
    if value is None:
        value = store[key] = make()
        if len(store) > max_entries:
            store.popitem(last=False)
    else:
        store.move_to_end(key)
    return value
