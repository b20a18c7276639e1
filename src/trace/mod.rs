// SPDX-License-Identifier: GPL-2.0
// Copyright (c) 2026 The scx_fairquota authors
//! `scx_fairquota trace`: record a bounded window of the running
//! scheduler's events (bpf/trace.bpf.h) and write it as a Perfetto trace
//! and a PNG timeline.
//!
//! The tracer opens the ring buffer and the switch the daemon pinned, sets
//! the switch to a deadline (the end of the window), reads the ring buffer
//! every 20 ms until then and turns the switch off. Memory is bounded by
//! the ring buffer in the kernel and by --max-events here; a tracer that
//! dies leaves tracing on only until its deadline.

mod perfetto;
mod png;
pub mod timeline;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle, RingBufferBuilder};
use log::{info, warn};

use crate::{bpf_intf, config, control, sysfs};
use timeline::{Event, Timeline};

#[cfg(test)]
pub use perfetto::encode as encode_perfetto;

/// Longest window: the data of a minute of a busy host is already large.
pub const MAX_DURATION_S: f64 = 60.0;

/// What to record and where to write it.
#[derive(Debug, Clone)]
pub struct Request {
    pub duration: Duration,
    pub out: PathBuf,
    pub png: PathBuf,
    pub rows: usize,
    pub max_events: usize,
}

/// The PNG path for a trace written to @out: the same name ending in .png.
pub fn default_png(out: &Path) -> PathBuf {
    out.with_extension("png")
}

fn monotonic_ns() -> u64 {
    // SAFETY: clock_gettime() fills the timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn write_ctl(ctl: &MapHandle, until_ns: u64) -> Result<u64> {
    let key = 0u32.to_ne_bytes();
    let old = ctl
        .lookup(&key, MapFlags::ANY)
        .context("reading the trace_ctl map")?
        .and_then(|b| config::from_bytes::<bpf_intf::fq_trace_ctl>(&b))
        .map(|c| c.dropped)
        .unwrap_or(0);
    let v = bpf_intf::fq_trace_ctl {
        until_ns,
        dropped: if until_ns == 0 { old } else { 0 },
    };
    ctl.update(&key, config::as_bytes(&v), MapFlags::ANY)
        .context("writing the trace_ctl map")?;
    Ok(old)
}

/// Record the running scheduler's events for @req.duration (less if
/// @stop is set or --max-events is reached): the timeline.
fn record(req: &Request, stop: &AtomicBool) -> Result<Timeline> {
    let [events_map, ctl] =
        control::open_running_maps([control::PIN_TRACE_EVENTS, control::PIN_TRACE_CTL])?;
    let Some(_lock) = control::Lock::try_trace()? else {
        bail!("another `scx_fairquota trace` is running; wait for it to finish");
    };
    let events = RefCell::new(Vec::<Event>::new());
    let mut builder = RingBufferBuilder::new();
    builder
        .add(&events_map, |data: &[u8]| {
            let mut ev = events.borrow_mut();
            if ev.len() < req.max_events
                && let Some(e) = Event::parse(data)
            {
                ev.push(e);
            }
            0
        })
        .context("opening the trace ring buffer")?;
    let rb = builder.build().context("opening the trace ring buffer")?;
    // Drain what an earlier tracer left behind.
    rb.consume().context("reading the trace ring buffer")?;
    events.borrow_mut().clear();

    let origin = monotonic_ns();
    let until = origin + req.duration.as_nanos() as u64;
    write_ctl(&ctl, until)?;
    let mut end = until;
    let res = loop {
        if let Err(e) = rb.consume() {
            break Err(anyhow!(e).context("reading the trace ring buffer"));
        }
        let now = monotonic_ns();
        if now >= until {
            break Ok(());
        }
        if stop.load(Ordering::Relaxed) || events.borrow().len() >= req.max_events {
            end = now;
            break Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Off before anything else, also after an error.
    let dropped = write_ctl(&ctl, 0)?;
    res?;
    rb.consume().context("reading the trace ring buffer")?;
    drop(rb);
    let events = events.into_inner();
    if events.len() >= req.max_events {
        warn!(
            "stopped after --max-events {} events ({:.2} s)",
            req.max_events,
            (end - origin) as f64 / 1e9
        );
    }
    if dropped > 0 {
        warn!("{dropped} events were lost to a full ring buffer; the timeline has gaps");
    }
    Ok(Timeline::build(&events, origin, end - origin, dropped))
}

/// `scx_fairquota trace`: record, then write both files.
pub fn run(req: &Request, stop: &AtomicBool) -> Result<()> {
    info!(
        "tracing for {:.1} s (Ctrl-C ends it early)",
        req.duration.as_secs_f64()
    );
    let tl = record(req, stop)?;
    if !sysfs::attached_scheduler(Path::new(sysfs::SCHED_EXT_DIR))
        .is_some_and(|n| n.starts_with("fairquota"))
    {
        warn!("scx_fairquota was detached during the trace; its end is missing");
    }
    std::fs::write(&req.out, perfetto::encode(&tl))
        .with_context(|| format!("writing {}", req.out.display()))?;
    let title = format!(
        "scx_fairquota trace: {:.2} s, {} tasks ({} shown), {} events, kernel {}",
        tl.duration_ns as f64 / 1e9,
        tl.tasks.len(),
        tl.tasks.len().min(req.rows),
        tl.nr_events,
        sysfs::kernel_release()
    );
    png::write(&tl, req.rows, &title, &req.png)?;
    println!(
        "scx_fairquota: traced {:.2} s: {} events, {} tasks, {} dropped",
        tl.duration_ns as f64 / 1e9,
        tl.nr_events,
        tl.tasks.len(),
        tl.dropped
    );
    println!(
        "scx_fairquota: wrote {} (open it in https://ui.perfetto.dev) and {}",
        req.out.display(),
        req.png.display()
    );
    Ok(())
}
