-- peak_by_rank: the three peaks of every (job, rank, device), in bytes: `memory_peak`'s
-- answer on that device, as `pt-snap ranks` reports it (the summary table).
SELECT job, rank, device, peak_allocated, peak_active, peak_reserved
FROM summary
ORDER BY job, rank, device
