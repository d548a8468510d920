"""What a consumer's pull with a TAG subscription delivers: two filters, one on each side.

1. **The broker** decides from the ConsumeQueue alone: a unit passes when its tags code (the
   ``String.hashCode`` of TAGS that dispatch stored) is in the subscription's code set
   (``ExpressionMessageFilter.isMatchedByConsumeQueue``;
   :meth:`rmqlab.formats.consumequeue.ConsumeQueue.tag_mask`). It never reads TAGS, so two tags
   with the same hash code (``Aa`` and ``BB``) both pass.
2. **The client** re-checks the string: ``PullAPIWrapper.processPullResult`` keeps a pulled
   message only when its TAGS is in the subscription's tag set
   (:func:`rmqlab.formats.consumequeue.subscription_tags`).

:func:`pull_with_tags` runs both on a real store's queue and returns one row per unit.

>>> import tempfile
>>> from rmqlab.lab.generate import generate_store
>>> from rmqlab.lab.workload import Workload
>>> root = tempfile.mkdtemp()
>>> _ = generate_store(root, Workload(messages=200, seed=1, tags=("Aa", "BB", "TagA")), hash_slot_num=64,
...                    index_num=512)
>>> pulled = pull_with_tags(Store(root, hash_slot_num=64, index_num=512), "TopicTest", 0, "Aa")
>>> sorted(pulled.loc[pulled["broker_passes"], "tags"].unique())
['Aa', 'BB']
>>> bool((pulled["delivered"] == (pulled["tags"] == "Aa")).all())
True
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.store.directory import Store

__all__ = ["pull_with_tags"]


def pull_with_tags(store: Store, topic: str, queue_id: int, subscription: str | Iterable[str]) -> pd.DataFrame:
    """Every unit of the queue (`topic`, `queue_id`) with what each side decides for the TAG
    `subscription` ("TagA || TagB", or a list of tags; "*" takes all).

    Columns: queue_offset, commitlog_offset, tags_code (as the unit holds it, resolved through
    the ConsumeQueueExt when the store has one), broker_passes (the code check),
    tags (TAGS of the message, read from the CommitLog), client_keeps (the string check, for the
    units the broker passes; False for the others, which the client never sees), delivered
    (both). ``attrs``: subscription, codes (the code set), tags (the tag set).
    Cost: the queue's units, plus one CommitLog read per unit (for the tags column).
    """
    folder = cq.queue_dir(store.root, topic, queue_id)
    ext_dir = store.root / cqx.FOLDER / topic / str(int(queue_id)) if store.consume_queue_ext else None
    with cq.ConsumeQueue.open(folder, store.consume_queue_file_size) as q:
        ext = cqx.ConsumeQueueExt.open(ext_dir) if ext_dir is not None and ext_dir.is_dir() else None
        try:
            passes = q.tag_mask(subscription, ext=ext)
            codes, _ = q.resolved_tags_codes(ext)
            units = q.to_frame()
        finally:
            if ext is not None:
                ext.close()
    read = store.read_at(units["commitlog_offset"].to_numpy(np.int64)) if len(units) else pd.DataFrame({"tags": []})
    by_offset = dict(zip(read["phy_offset"], read["tags"])) if len(units) else {}
    tags = [by_offset.get(int(o)) for o in units["commitlog_offset"]]
    wanted = cq.subscription_tags(subscription)
    keeps = np.array([wanted is None or t in wanted for t in tags], dtype=bool) & passes
    out = pd.DataFrame({"queue_offset": units["queue_offset"], "commitlog_offset": units["commitlog_offset"],
                        "tags_code": codes, "broker_passes": passes, "tags": tags, "client_keeps": keeps,
                        "delivered": keeps})
    out.attrs.update({"subscription": subscription, "codes": cq.subscription_codes(subscription),
                      "tags": wanted})
    return out
