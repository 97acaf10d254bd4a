//! Which ranks stand out: the median of the set, its median absolute deviation, and the
//! verdict on each row.

use serde_json::{json, Value as Json};

use crate::peak::Metric;
use crate::units::human_bytes;

/// The outlier verdict of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outlier: bool,
    /// Signed distance from the median, in percent of it; `None` when the median is 0.
    pub vs_median_percent: Option<f64>,
    /// Why it is an outlier; `None` when it is not.
    pub reason: Option<String>,
}

/// How far from the median a peak must be to be an outlier: more than
/// [`OutlierRule::MAX_SCALED_MADS`] scaled MADs and at least
/// [`OutlierRule::MIN_RELATIVE`] of the median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutlierRule {
    pub metric: Metric,
    /// Rows with a value of the metric.
    pub rows: usize,
    pub median: f64,
    /// The median of the absolute deviations from the median.
    pub mad: f64,
    /// [`OutlierRule::MAD_SCALE`] · MAD: the standard deviation a normal sample would have.
    pub scaled_mad: f64,
}

impl OutlierRule {
    pub const MAD_SCALE: f64 = 1.4826;
    pub const MAX_SCALED_MADS: f64 = 3.0;
    pub const MIN_RELATIVE: f64 = 0.10;

    /// The rule for a set of values; `None` for an empty one.
    pub fn of(metric: Metric, values: &[i64]) -> Option<Self> {
        let median = median(values.iter().map(|&v| v as f64).collect())?;
        let deviations = values.iter().map(|&v| (v as f64 - median).abs()).collect();
        let mad = self::median(deviations)?;
        Some(OutlierRule {
            metric,
            rows: values.len(),
            median,
            mad,
            scaled_mad: Self::MAD_SCALE * mad,
        })
    }

    /// Both conditions: |v − median| > 3 · 1.4826 · MAD, and |v − median| ≥ 10% of the
    /// median. With MAD = 0 (more than half the rows exactly at the median) the first one is
    /// any difference at all, so the 10% condition alone decides: a rank 10% off a set that
    /// otherwise agrees to the byte is an outlier.
    pub fn judge(&self, value: i64) -> Verdict {
        let distance = value as f64 - self.median;
        let far_in_mads = distance.abs() > Self::MAX_SCALED_MADS * self.scaled_mad;
        let far_relative = distance.abs() >= Self::MIN_RELATIVE * self.median.abs();
        let outlier = far_in_mads && far_relative;
        let vs_median_percent = (self.median != 0.0).then(|| 100.0 * distance / self.median);
        let reason = outlier.then(|| {
            let side = if distance > 0.0 { "above" } else { "below" };
            let relative = match vs_median_percent {
                Some(p) => format!("{:.1}% {side}", p.abs()),
                None => side.to_owned(),
            };
            let mads = if self.scaled_mad > 0.0 {
                format!(
                    "{:.1} scaled MADs (1.4826·MAD = {})",
                    distance.abs() / self.scaled_mad,
                    human_bytes(self.scaled_mad)
                )
            } else {
                "MAD = 0: more than half the rows are exactly at the median".to_owned()
            };
            format!(
                "peak_{} {} is {relative} the median {}; {mads}",
                self.metric.name(),
                human_bytes(value as f64),
                human_bytes(self.median)
            )
        });
        Verdict {
            outlier,
            vs_median_percent,
            reason,
        }
    }

    pub(super) fn to_json(self) -> Json {
        json!({
            "metric": format!("peak_{}", self.metric.name()),
            "rows": self.rows,
            "median": self.median,
            "mad": self.mad,
            "scaled_mad": self.scaled_mad,
            "mad_scale": Self::MAD_SCALE,
            "max_scaled_mads": Self::MAX_SCALED_MADS,
            "min_relative_difference": Self::MIN_RELATIVE,
        })
    }
}

/// The median (the mean of the two middle values for an even count); `None` for none.
pub(super) fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// The medians of the set, each over the rows that have the value.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Medians {
    pub peak_allocated: Option<f64>,
    pub peak_active: Option<f64>,
    pub peak_reserved: Option<f64>,
    pub reserved_minus_allocated: Option<f64>,
    pub oom_events: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(values: &[i64]) -> OutlierRule {
        OutlierRule::of(Metric::Active, values).unwrap()
    }

    #[test]
    fn median_and_mad() {
        let r = rule(&[1, 2, 3, 4, 100]);
        assert_eq!((r.median, r.mad), (3.0, 1.0));
        assert!((r.scaled_mad - 1.4826).abs() < 1e-12);
        let r = rule(&[4, 1, 3, 2]);
        assert_eq!((r.median, r.mad), (2.5, 1.0));
        assert!(OutlierRule::of(Metric::Active, &[]).is_none());
    }

    #[test]
    fn an_outlier_is_far_in_mads_and_in_percent() {
        // Spread of ~1%: the 10% condition protects ranks that are only many MADs off.
        let r = rule(&[1000, 1005, 995, 1002, 998, 1001, 999, 1060]);
        let v = r.judge(1060);
        assert!(!v.outlier, "6% off is not an outlier, however many MADs");
        assert!((v.vs_median_percent.unwrap() - 5.95).abs() < 0.1);
        let v = r.judge(1200);
        assert!(v.outlier);
        assert!(v.reason.unwrap().contains("above the median"));
        let v = r.judge(800);
        assert!(v.outlier && v.reason.unwrap().contains("below"));
        // A wide spread: 20% off but within 3 scaled MADs.
        let r = rule(&[600, 800, 1000, 1200, 1400]);
        assert!(!r.judge(1200).outlier);
        assert_eq!(r.judge(1000).reason, None);
    }

    #[test]
    fn with_mad_zero_ten_percent_decides() {
        let r = rule(&[1000, 1000, 1000, 1000, 1099]);
        assert_eq!(r.mad, 0.0);
        assert!(!r.judge(1099).outlier, "9.9% off");
        assert!(!r.judge(1000).outlier);
        let r = rule(&[1000, 1000, 1000, 1000, 1100]);
        let v = r.judge(1100);
        assert!(v.outlier, "10% off with MAD 0");
        assert!(v.reason.unwrap().contains("MAD = 0"));
        assert!(r.judge(900).outlier);
        // A median of 0: any positive value is off by more than 10% of it.
        let r = rule(&[0, 0, 0, 5]);
        let v = r.judge(5);
        assert!(v.outlier && v.vs_median_percent.is_none());
    }
}
