"""Vector feedback: one more vector list, nearest the centroid of the best memories (``recall.vector_feedback``).

Rocchio's feedback ("Relevance feedback in information retrieval", 1971) on vectors: the memories
found first are about the question's subject in the words of the person who wrote them; the memories
nearest their centroid are other conversations about that subject, which the question's own vector
(its wording) misses. Off unless ``vector_feedback`` > 0.

Failure policy: a database error raises, as for the first lists.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcp_memory.deps import Ready
from mcp_memory.models import RecallFilter
from mcp_memory.settings import RecallSettings

__all__ = ["vector_feedback"]


async def vector_feedback(
    ready: Ready, session: str, fused: Sequence[tuple[str, float]], settings: RecallSettings,
    filters: RecallFilter | None = None,
) -> list[str]:
    """memory_ids nearest the unit centroid of the first ``vector_feedback`` fused memories, best first."""
    top = [memory_id for memory_id, _ in fused[: settings.vector_feedback]]
    if not top:
        return []
    found = ready.vectors.vectors(session, top)
    if found is None:
        found = await ready.repository.embeddings(session, top)
    if not found:
        return []
    centroid = np.mean(np.stack(list(found.values())), axis=0)
    centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    [hits] = await ready.vectors.nearest(ready.repository, session, [centroid.astype(np.float32)],
                                         settings.vector_candidates, settings.hnsw_ef_search, None, filters)
    return [memory_id for memory_id, _ in hits]
