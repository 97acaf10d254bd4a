-- rank_outliers: the (rank, device) rows whose active peak is an outlier of its job, by the
-- rule of `pt-snap ranks`: |peak − median| > 3 × 1.4826 × MAD and |peak − median| ≥ 10% of
-- the median (MAD: the median of the absolute deviations from the median; the median of an
-- even count is the mean of the two middle values). Bytes; percent of the median.
WITH peaks AS (
  SELECT job, rank, device, CAST(peak_active AS DOUBLE) AS peak
  FROM summary
  WHERE peak_active IS NOT NULL
),
centre AS (
  SELECT job, median(peak) AS median_peak FROM peaks GROUP BY job
),
deviation AS (
  SELECT p.job, p.rank, p.device, p.peak, c.median_peak,
         abs(p.peak - c.median_peak) AS distance
  FROM peaks p JOIN centre c ON p.job = c.job
),
spread AS (
  SELECT job, median(distance) AS mad FROM deviation GROUP BY job
)
SELECT d.job, d.rank, d.device,
       CAST(d.peak AS BIGINT) AS peak_active,
       d.median_peak AS median_peak_active,
       1.4826 * s.mad AS scaled_mad,
       CASE WHEN d.median_peak = 0 THEN NULL
            ELSE 100.0 * (d.peak - d.median_peak) / d.median_peak END AS vs_median_percent
FROM deviation d JOIN spread s ON d.job = s.job
WHERE d.distance > 3.0 * 1.4826 * s.mad
  AND d.distance >= 0.1 * abs(d.median_peak)
ORDER BY d.job, d.rank, d.device
