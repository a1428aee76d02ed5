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


def kept(store: OrderedDict[K, V], key: K, make: Callable[[], V], most: int) -> V:
    """`store[key]`, made by `make` when missing; the store then keeps the `most` most recently used."""
    value = store.get(key)
    if value is None:
        value = store[key] = make()
        if len(store) > most:
            store.popitem(last=False)
    else:
        store.move_to_end(key)
    return value
