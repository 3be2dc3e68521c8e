//! Running one scenario with each build, alternating, and printing its row: the ranges over
//! the runs and, when two builds are compared, the ratio of their medians.

use std::path::PathBuf;

use super::{Measured, latency_summary};

/// One scenario's rows: this build's figures, and the base build's when comparing.
struct Row {
    label: String,
    unit: &'static str,
    base: Vec<f64>,
    ours: Vec<f64>,
    our_ms: Vec<f64>,
}

impl Row {
    fn print(self, comparing: bool) {
        let range = |values: &[f64]| {
            let low = values.iter().copied().fold(f64::INFINITY, f64::min);
            let high = values.iter().copied().fold(0.0, f64::max);
            format!("{low:.0}–{high:.0}")
        };
        let median = |values: &[f64]| {
            let mut sorted = values.to_vec();
            sorted.sort_by(f64::total_cmp);
            sorted[sorted.len() / 2]
        };
        if comparing && self.base.is_empty() {
            // A scenario only this build can run.
            println!(
                "| {} | — | {} {unit} | — | {} |",
                self.label,
                range(&self.ours),
                latency_summary(self.our_ms),
                unit = self.unit,
            );
        } else if comparing {
            println!(
                "| {} | {} {unit} | {} {unit} | {:.2}× | {} |",
                self.label,
                range(&self.base),
                range(&self.ours),
                median(&self.ours) / median(&self.base),
                latency_summary(self.our_ms),
                unit = self.unit,
            );
        } else {
            println!(
                "| {} | {} {} | {} |",
                self.label,
                range(&self.ours),
                self.unit,
                latency_summary(self.our_ms)
            );
        }
    }
}

/// Runs `measure` with each build, alternating, `reps` times each (unless `label` does not
/// hold one of the `|`-separated `SHEPHERD_BENCH_ONLY` texts, when that is set).
pub(super) async fn compare<F, Fut>(
    builds: &[(bool, PathBuf)],
    reps: usize,
    label: &str,
    unit: &'static str,
    measure: F,
) where
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Measured>,
{
    if let Ok(only) = std::env::var("SHEPHERD_BENCH_ONLY")
        && !only.split('|').any(|wanted| label.contains(wanted))
    {
        return;
    }
    let mut row = Row {
        label: label.to_owned(),
        unit,
        base: Vec::new(),
        ours: Vec::new(),
        our_ms: Vec::new(),
    };
    for rep in 0..reps {
        let mut order: Vec<&(bool, PathBuf)> = builds.iter().collect();
        if rep % 2 == 1 {
            order.reverse();
        }
        for (is_base, dir) in order {
            let measured = measure(dir.clone()).await;
            if *is_base {
                row.base.push(measured.rate);
            } else {
                row.ours.push(measured.rate);
                row.our_ms.extend(measured.ms);
            }
        }
    }
    row.print(COMPARING.load(std::sync::atomic::Ordering::Relaxed));
}

/// Whether this run compares two builds (its table has a column for each).
pub(super) static COMPARING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);
