-- top_sites_across_ranks: the allocation sites (callstacks normalised to match across
-- machines) holding the most bytes at each rank's active peak, summed over the ranks of a
-- job. A block is live at event E when it was allocated at or before E (or before the trace:
-- -1) and not freed by E (free after E, or never: -1). Blocks without a callstack (live
-- before the trace, or a database without stacks) are one site, '(no callstack)'.
WITH peak AS (
  SELECT job, rank, device, peak_active_event_id AS event_id
  FROM summary
  WHERE peak_active_event_id IS NOT NULL
),
live AS (
  SELECT b.job, b.rank, b.device, b.size, b.callstack_id
  FROM blocks b
  JOIN peak p ON b.job = p.job AND b.rank = p.rank AND b.device = p.device
  WHERE (b.alloc_event_id = -1 OR b.alloc_event_id <= p.event_id)
    AND (b.free_event_id = -1 OR b.free_event_id > p.event_id)
),
sited AS (
  SELECT l.job, l.rank, l.size,
         COALESCE(c.normalized, '(no callstack)') AS site
  FROM live l
  LEFT JOIN callstacks c
    ON c.job = l.job AND c.rank = l.rank AND c.id = l.callstack_id
)
SELECT job, site,
       SUM(size) AS bytes,
       COUNT(*) AS blocks,
       COUNT(DISTINCT rank) AS ranks
FROM sited
GROUP BY job, site
ORDER BY job, bytes DESC, site
LIMIT 20
