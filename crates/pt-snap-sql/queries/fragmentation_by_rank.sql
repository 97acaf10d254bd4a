-- fragmentation_by_rank: reserved but unallocated memory at each (rank, device)'s reserved
-- peak — `allocator_gap`'s reserved − allocated there, in bytes, and as a fraction of the
-- reserved peak (null when nothing was reserved).
SELECT job, rank, device, peak_reserved, reserved_minus_allocated,
       CAST(reserved_minus_allocated AS DOUBLE) / NULLIF(peak_reserved, 0) AS fragmentation
FROM summary
ORDER BY job, rank, device
