//! `sparsec tune figure`: the autotuning benchmark's per-input speedups over each baseline,
//! sorted, one panel per kernel and thread count (as WACO's Figures 5-1 to 5-3).
//!
//! The input is a CSV file with a header naming at least the columns `kernel`, `input`,
//! `threads`, `baseline` and `speedup` (in any order, others ignored): one row per input
//! and baseline, `speedup` being the baseline's time over the tuned time. Fields hold no
//! commas or quotes.

use std::collections::BTreeMap;
use std::path::Path;

use miette::{miette, Result};
use plotters::prelude::*;

/// A panel: the speedups over each baseline, by baseline name.
type Panel = BTreeMap<String, Vec<f64>>;

/// Read `args.csv` and draw `args.out`.
pub fn figure(args: &crate::tune::FigureArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.csv)
        .map_err(|e| miette!("cannot read {}: {e}", args.csv.display()))?;
    let panels = parse(&text).map_err(|e| miette!("{}: {e}", args.csv.display()))?;
    draw(&args.out, &panels)
}

/// The panels of a speedup CSV, by (kernel, threads).
fn parse(text: &str) -> std::result::Result<BTreeMap<(String, usize), Panel>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or("the file is empty")?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let column = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| format!("line 1: no `{name}` column (the header is `{header}`)"))
    };
    let [kernel, threads, baseline, speedup] = [
        column("kernel")?,
        column("threads")?,
        column("baseline")?,
        column("speedup")?,
    ];
    column("input")?;
    let mut panels: BTreeMap<(String, usize), Panel> = BTreeMap::new();
    for (n, line) in lines {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(format!(
                "line {}: {} fields where the header has {}",
                n + 1,
                fields.len(),
                names.len()
            ));
        }
        let threads: usize = fields[threads].parse().map_err(|_| {
            format!(
                "line {}: `{}` is not a thread count",
                n + 1,
                fields[threads]
            )
        })?;
        let speedup: f64 = fields[speedup]
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0)
            .ok_or_else(|| {
                format!(
                    "line {}: `{}` is not a positive speedup",
                    n + 1,
                    fields[speedup]
                )
            })?;
        panels
            .entry((fields[kernel].to_string(), threads))
            .or_default()
            .entry(fields[baseline].to_string())
            .or_default()
            .push(speedup);
    }
    if panels.is_empty() {
        return Err("no speedups below the header".into());
    }
    Ok(panels)
}

/// Draw the panels in a grid, two across.
fn draw(path: &Path, panels: &BTreeMap<(String, usize), Panel>) -> Result<()> {
    crate::plot::load_font()?;
    let across = panels.len().min(2);
    let down = panels.len().div_ceil(across);
    let root =
        BitMapBackend::new(path, (520 * across as u32, 380 * down as u32)).into_drawing_area();
    let failed = |e: &dyn std::fmt::Display| miette!("cannot draw {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    for (area, ((kernel, threads), panel)) in root.split_evenly((down, across)).iter().zip(panels) {
        let all = panel.values().flatten();
        let lowest = all.clone().copied().fold(0.5, f64::min) * 0.9;
        let highest = all.copied().fold(2.0, f64::max) * 1.1;
        let inputs = panel.values().map(Vec::len).max().unwrap_or(1).max(2);
        let plural = if *threads == 1 { "" } else { "s" };
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{kernel}, {threads} thread{plural}"),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(52)
            .build_cartesian_2d(0f64..(inputs - 1) as f64, (lowest..highest).log_scale())
            .map_err(|e| failed(&e))?;
        chart
            .configure_mesh()
            .x_desc("inputs, sorted by speedup")
            .y_desc("speedup of the tuned kernel")
            .x_labels(inputs.min(10))
            .x_label_formatter(&|v| format!("{}", v.round() as i64 + 1))
            .y_labels(12)
            .y_label_formatter(&|v| format!("{v:.2}x"))
            .draw()
            .map_err(|e| failed(&e))?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, 1.0), ((inputs - 1) as f64, 1.0)],
                BLACK.mix(0.5),
            ))
            .map_err(|e| failed(&e))?;
        for (k, (baseline, speedups)) in panel.iter().enumerate() {
            let mut sorted = speedups.clone();
            sorted.sort_by(f64::total_cmp);
            let color = Palette99::pick(k).to_rgba();
            let points: Vec<(f64, f64)> = sorted
                .iter()
                .enumerate()
                .map(|(i, &s)| (i as f64, s))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| failed(&e))?
                .label(format!("over {baseline}"))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color));
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(|e| failed(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| failed(&e))?;
    }
    root.present().map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_panels_and_says_which_line_is_wrong() {
        let good = "kernel,input,threads,baseline,speedup\nspmv,a,1,default,1.5\nspmv,b,1,default,0.9\nspmv,a,1,mkl,1.2\nspmm,a,2,default,2\n";
        let panels = parse(good).unwrap();
        assert_eq!(panels.len(), 2);
        assert_eq!(panels[&("spmv".into(), 1)]["default"], vec![1.5, 0.9]);
        let missing = parse("kernel,input,threads,speedup\n").unwrap_err();
        assert!(missing.contains("no `baseline` column"), "{missing}");
        let short = parse("kernel,input,threads,baseline,speedup\nspmv,a,1,default\n").unwrap_err();
        assert!(short.contains("line 2: 4 fields"), "{short}");
        let bad = parse("kernel,input,threads,baseline,speedup\nspmv,a,1,x,-1\n").unwrap_err();
        assert!(
            bad.contains("line 2: `-1` is not a positive speedup"),
            "{bad}"
        );
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("kernel,input,threads,baseline,speedup\n").is_err());
    }
}
