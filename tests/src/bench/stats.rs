//! Latency summaries: percentiles (nearest rank) of a sample of milliseconds.

use serde::Serialize;

/// p50/p90/p99, mean and max of a sample, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Sample size.
    pub n: usize,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarises `xs` (any order); all zero when empty.
    pub fn of(xs: &[f64]) -> Summary {
        if xs.is_empty() {
            return Summary::default();
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Summary {
            n: v.len(),
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            max: v[v.len() - 1],
        }
    }

    /// `self - base` per percentile (the overhead of a path over the direct one).
    pub fn minus(&self, base: &Summary) -> Summary {
        Summary {
            n: self.n,
            p50: self.p50 - base.p50,
            p90: self.p90 - base.p90,
            p99: self.p99 - base.p99,
            mean: self.mean - base.mean,
            max: self.max - base.max,
        }
    }
}

/// The median of `xs` (0 when empty).
pub fn median(xs: &[f64]) -> f64 {
    Summary::of(xs).p50
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&xs);
        assert_eq!((s.p50, s.p90, s.p99, s.max), (50.0, 90.0, 99.0, 100.0));
        assert_eq!(Summary::of(&[]).n, 0);
    }
}
