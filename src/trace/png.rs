// SPDX-License-Identifier: GPL-2.0
// Copyright (c) 2026 The scx_fairquota authors
//! The trace as a PNG timeline (plotters, with the DejaVu Sans font
//! compiled in: a server needs no fonts installed). One row per task,
//! busiest first, on a time axis: its turns on a CPU colored by class,
//! its throttled spans as red bands, guard moves as black marks.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::timeline::{Task, Timeline};

const FONT: &str = "sans-serif";
const WIDTH: u32 = 1600;
const ROW_PX: u32 = 22;
const HEADER_PX: u32 = 64;
const LABEL_PX: u32 = 230;
const AXIS_PX: u32 = 48;

const RR: RGBColor = RGBColor(52, 120, 220);
const FIFO: RGBColor = RGBColor(240, 140, 20);
const THROTTLED: RGBColor = RGBColor(215, 40, 40);

/// Register the bundled font once; a failure is remembered, not retried
/// as a success.
fn register_font() -> Result<()> {
    static LOADED: OnceLock<bool> = OnceLock::new();
    let ok = *LOADED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    ok.then_some(())
        .ok_or_else(|| anyhow!("the bundled DejaVu Sans font did not load"))
}

/// Size of the picture for @rows task rows.
pub fn size(rows: usize) -> (u32, u32) {
    (
        WIDTH,
        HEADER_PX + AXIS_PX + 16 + ROW_PX * rows.max(1) as u32,
    )
}

/// Draw the @rows busiest tasks of @tl into the PNG file @path.
pub fn write(tl: &Timeline, rows: usize, title: &str, path: &Path) -> Result<()> {
    register_font()?;
    let tasks: Vec<&Task> = tl.tasks.iter().take(rows).collect();
    let root = BitMapBackend::new(path, size(tasks.len())).into_drawing_area();
    draw(&root, tl, &tasks, title).map_err(|e| anyhow!("drawing {}: {e}", path.display()))?;
    root.present()
        .map_err(|e| anyhow!("writing {}: {e}", path.display()))
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    tl: &Timeline,
    tasks: &[&Task],
    title: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (header, body) = root.split_vertically(HEADER_PX);
    header.draw(&Text::new(title, (16, 10), (FONT, 20).into_font()))?;
    legend(&header)?;

    let n = tasks.len().max(1) as f64;
    let dur_ms = (tl.duration_ns as f64 / 1e6).max(1e-3);
    let mut chart = ChartBuilder::on(&body)
        .margin_right(24)
        .margin_top(8)
        .x_label_area_size(AXIS_PX)
        .y_label_area_size(LABEL_PX)
        .build_cartesian_2d(0f64..dur_ms, 0f64..n)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("time since the start of the trace (ms)")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;

    let ms = |ns: u64| ns as f64 / 1e6;
    // Row i (0 = busiest) spans y in [n - i - 1, n - i].
    let band = |i: usize, lo: f64, hi: f64| (n - i as f64 - 1.0 + lo, n - i as f64 - 1.0 + hi);
    for (i, t) in tasks.iter().enumerate() {
        let (y0, y1) = band(i, 0.08, 0.92);
        chart.draw_series(t.throttled.iter().map(|s| {
            Rectangle::new(
                [(ms(s.start_ns), y0), (ms(s.end_ns), y1)],
                THROTTLED.mix(0.3).filled(),
            )
        }))?;
        let (y0, y1) = band(i, 0.2, 0.8);
        chart.draw_series(t.runs.iter().map(|s| {
            let color = if s.fifo { FIFO } else { RR };
            Rectangle::new([(ms(s.start_ns), y0), (ms(s.end_ns), y1)], color.filled())
        }))?;
        let (_, top) = band(i, 0.0, 0.95);
        chart.draw_series(
            t.guards
                .iter()
                .map(|&g| TriangleMarker::new((ms(g), top), 5, BLACK.filled())),
        )?;
        // The row's label, right-aligned left of the plot.
        let (px, py) = chart.backend_coord(&(0.0, band(i, 0.5, 0.5).0));
        let label = format!(
            "{}  {:.0}%",
            t.label(),
            100.0 * t.runtime_ns() as f64 / tl.duration_ns.max(1) as f64
        );
        let style = (FONT, 14)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(label, (px - 8, py), style))?;
    }
    Ok(())
}

fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = (FONT, 14).into_font();
    let y = 44;
    let mut x = 16;
    for (name, color) in [
        ("RR turn", RR.filled()),
        ("FIFO turn", FIFO.filled()),
        ("throttled", THROTTLED.mix(0.3).filled()),
    ] {
        area.draw(&Rectangle::new([(x, y - 6), (x + 28, y + 6)], color))?;
        area.draw(&Text::new(name, (x + 34, y - 8), style.clone()))?;
        x += 150;
    }
    area.draw(&TriangleMarker::new((x + 8, y), 5, BLACK.filled()))?;
    area.draw(&Text::new(
        "guard made the task urgent;  % = share of one CPU",
        (x + 20, y - 8),
        style,
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::timeline::{Kind, Timeline, tests::ev};
    use super::*;

    #[test]
    fn draws_a_png_of_the_rows_asked_for() {
        let o = 10_000_000;
        let evs = [
            ev(o, 1, Kind::Run, 0, false),
            ev(o + 4_000_000, 1, Kind::Stop, 0, false),
            ev(o + 4_000_000, 1, Kind::Throttle, 0, false),
            ev(o + 4_000_000, 2, Kind::Run, 0, true),
            ev(o + 9_000_000, 1, Kind::Release, 0, false),
            ev(o + 9_500_000, 3, Kind::Guard, 1, false),
        ];
        let tl = Timeline::build(&evs, o, 10_000_000, 0);
        let dir = std::env::temp_dir().join(format!("fq-png-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.png");
        write(&tl, 2, "test", &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height follow the signature and chunk header.
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!((w, h), size(2));
        assert!(size(3).1 > size(2).1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
