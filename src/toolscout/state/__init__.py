"""Durable state shared by every toolscout process of one deployment: one store, two engines.

    state = open_state(None)                          # SQLite in the user state directory
    state = open_state("postgresql://toolscout@db/toolscout")   # shared by replicas
    with state.transaction("pins") as records:        # atomic; writers of a kind take turns
        entry = records.get(key)
        records.put(key, {...})
    state.revision("pins")                            # changes whenever a transaction changed pins

What it holds is up to its users (`toolscout.security.pinning` keeps pins, approvals and pending
changes in kind "pins", one record per server identity); keys are opaque strings to the store.
"""

from toolscout.state.location import STATE_ENV, default_state_location, open_state
from toolscout.state.store import Records, StateStore

__all__ = ["STATE_ENV", "Records", "StateStore", "default_state_location", "open_state"]
