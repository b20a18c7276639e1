// SPDX-License-Identifier: GPL-2.0
// Copyright (c) 2026 The scx_fairquota authors
//
// This software may be used and distributed according to the terms of the
// GNU General Public License version 2.
mod bpf_skel;
pub use bpf_skel::*;
pub mod bpf_intf;
mod cgroups;
mod config;
mod control;
#[cfg(test)]
mod fuzz;
mod libbpf_log;
mod priority;
mod scheduler;
mod stats;
mod sysfs;
mod topology;
mod trace;

use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use clap::{CommandFactory, Parser, value_parser};
use log::{info, warn};

use config::{SliceMode, Tunables};
use scheduler::{RunEnd, Scheduler};

const SCHEDULER_NAME: &str = "scx_fairquota";

/// scx_fairquota: a sched_ext scheduler for colocating latency-critical and
/// batch work.
///
/// Tasks with nice below --fifo-below-nice run FIFO (first come, run until
/// they block or yield), ahead of every other task, with a starvation guard
/// that still lets other tasks in. All other tasks share the CPUs
/// round-robin by weight (nice). With --quota-us and --period-us each of
/// those tasks may use at most quota per period of CPU time, like giving
/// each its own cgroup cpu.max.
///
/// Change the tunables of a running instance with `scx_fairquota set`.
#[derive(Debug, Parser)]
#[command(name = SCHEDULER_NAME, version, args_conflicts_with_subcommands = true)]
struct Opts {
    #[command(subcommand)]
    cmd: Option<Cmd>,

    #[command(flatten)]
    run: RunOpts,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Change the tunables of the running scheduler, without reloading it.
    ///
    /// Only the options given change. The new values take effect within
    /// one period.
    Set(SetOpts),
    /// Print the tunables of the running scheduler.
    Show,
    /// Record what the running scheduler does for a few seconds and write
    /// it as a Perfetto trace (open it in ui.perfetto.dev) and a PNG
    /// timeline: one row per task, its turns on a CPU colored by class,
    /// throttled spans and guard moves marked.
    Trace(TraceOpts),
}

#[derive(Debug, clap::Args)]
struct TraceOpts {
    /// Seconds to record (0.01..=60).
    #[arg(long, default_value_t = 5.0, value_parser = parse_trace_duration)]
    duration: f64,
    /// The Perfetto trace (TrackEvent protobuf) to write.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The PNG timeline to write [default: FILE with the extension .png].
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    /// Tasks drawn in the PNG, busiest first (the trace has all).
    #[arg(long, default_value_t = 24, value_parser = value_parser!(u64).range(1..=500))]
    rows: u64,
    /// Stop early after this many events (bounds the tracer's memory,
    /// about 48 bytes per event).
    #[arg(long, default_value_t = 2_000_000,
          value_parser = value_parser!(u64).range(1..=20_000_000))]
    max_events: u64,
}

#[derive(Debug, clap::Args)]
struct RunOpts {
    /// RR time slice in microseconds [default: the kernel's EEVDF base
    /// slice for the online CPUs, 750 x (1 + log2(min(CPUs, 8))): 1500 on 2
    /// CPUs, 3000 on 8 or more; at least --slice-min-us].
    #[arg(long,
          value_parser = value_parser!(u64).range(config::SLICE_US_MIN..=config::SLICE_US_MAX))]
    slice_us: Option<u64>,

    /// RR slice mode: fixed (--slice-us) or split (--slice-us divided by the
    /// number of waiting RR tasks + 1, at least --slice-min-us).
    #[arg(long, value_enum, default_value_t = SliceMode::Fixed)]
    slice_mode: SliceMode,

    /// Smallest slice in split mode, in microseconds.
    #[arg(long, default_value_t = config::DEFAULT_SLICE_MIN_US,
          value_parser = value_parser!(u64).range(config::SLICE_MIN_US_MIN..=config::SLICE_US_MAX))]
    slice_min_us: u64,

    /// Bandwidth period in microseconds (1000..=1000000), as in cpu.max.
    #[arg(long, default_value_t = config::DEFAULT_PERIOD_US,
          value_parser = value_parser!(u64).range(config::PERIOD_US_MIN..=config::PERIOD_US_MAX))]
    period_us: u64,

    /// CPU time each RR task may use per period, in microseconds
    /// (1000..=--period-us). Without it there is no limit.
    #[arg(long, value_parser = value_parser!(u64).range(config::QUOTA_US_MIN..=config::PERIOD_US_MAX))]
    quota_us: Option<u64>,

    /// Tasks with a nice value below this run in the FIFO class.
    #[arg(long, default_value_t = config::DEFAULT_FIFO_BELOW_NICE, allow_negative_numbers = true,
          value_parser = value_parser!(i32).range(-20..=20))]
    fifo_below_nice: i32,

    /// Starvation guard: a queued RR task that has waited this many
    /// milliseconds and whose turn is next in the RR order goes first in
    /// its LLC (any RR task after at most 1 s; FIFO tasks after 1 s).
    #[arg(long, default_value_t = config::DEFAULT_GUARD_MS,
          value_parser = value_parser!(u64).range(config::GUARD_MS_MIN..=config::GUARD_MS_MAX))]
    guard_ms: u64,

    /// Smooth mode: enforce every quota (per task and per cgroup) over
    /// sub-periods of this many microseconds, each with its share of the
    /// quota, so a throttled group waits about this long at most whatever
    /// its period (1000..=1000000; 0 = off, whole periods as CFS; periods
    /// up to this long are enforced whole anyway).
    #[arg(long, default_value_t = config::DEFAULT_MAX_STALL_US)]
    max_stall_us: u64,

    /// Limit a cgroup v2 group and its descendants together to QUOTA us of
    /// CPU time per PERIOD us across all CPUs, like its cpu.max
    /// (PATH=QUOTA/PERIOD, PATH absolute or relative to /sys/fs/cgroup;
    /// a quota above the period is more than one CPU). Repeatable.
    #[arg(long = "cgroup", value_name = "PATH=QUOTA/PERIOD[/BURST]")]
    cgroups: Vec<cgroups::CgroupArg>,

    /// Print statistics every this many seconds (0 = off; also --stats). The same
    /// statistics are served on /var/run/scx/root/stats (see --monitor).
    #[arg(long, visible_alias = "stats", default_value_t = 1.0, value_parser = parse_interval)]
    stats_interval: f64,

    /// Number of tasks shown in the statistics table (0 = all).
    #[arg(long, default_value_t = 10)]
    top: usize,

    /// Number of limited cgroups shown in the statistics table and the
    /// final summary, busiest first (0 = all).
    #[arg(long, default_value_t = 20, value_name = "N")]
    top_cgroups: usize,

    /// Print statistics as one JSON object per line (with --stats or
    /// --monitor); the fields are those of --help-stats.
    #[arg(long)]
    json: bool,

    /// Do not run a scheduler: print the statistics of the running
    /// instance every this many seconds, read from its stats socket
    /// (root only).
    #[arg(long, value_parser = parse_interval, value_name = "SECS")]
    monitor: Option<f64>,

    /// Describe every statistics field and exit.
    #[arg(long)]
    help_stats: bool,

    /// Length of the debug dump the kernel writes when it ejects the
    /// scheduler (0 = kernel default).
    #[arg(long, default_value_t = 0)]
    exit_dump_len: u32,

    /// Print libbpf's messages (including the verifier log).
    #[arg(short, long)]
    verbose: bool,

    /// Log how much work the kernel's verifier did to load each BPF
    /// program (instructions processed, time), and the total.
    #[arg(long)]
    verifier_stats: bool,

    /// Test hook: make the BPF verifier reject the scheduler.
    #[arg(long, hide = true)]
    test_verifier_reject: bool,

    /// Test hook: make ops.init() fail as if it could not create its
    /// per-LLC state.
    #[arg(long, hide = true)]
    test_init_fail: bool,

    /// Test hook: a limited cgroup's release timer fails to re-arm once
    /// every 3 s, as a lost timer would (the sweep must find it), and a
    /// park's start of it fails once every 3 s (the scheduler goes on), and
    /// every start as a group leaves the cpu controller fails (the sweep
    /// must start it).
    #[arg(long, hide = true)]
    test_lose_cg_timers: bool,

    /// Test hook: an LLC's housekeeping timer fires but does nothing, not
    /// even re-arm, once every 2 s, as a lost timer would (the sweep must
    /// find it).
    #[arg(long, hide = true)]
    test_lose_llc_timers: bool,
}

#[derive(Debug, clap::Args)]
struct SetOpts {
    /// New RR time slice in microseconds.
    #[arg(long, value_parser = value_parser!(u64).range(config::SLICE_US_MIN..=config::SLICE_US_MAX))]
    slice_us: Option<u64>,
    /// New RR slice mode.
    #[arg(long, value_enum)]
    slice_mode: Option<SliceMode>,
    /// New smallest split slice in microseconds.
    #[arg(long, value_parser = value_parser!(u64).range(config::SLICE_MIN_US_MIN..=config::SLICE_US_MAX))]
    slice_min_us: Option<u64>,
    /// New bandwidth period in microseconds.
    #[arg(long, value_parser = value_parser!(u64).range(config::PERIOD_US_MIN..=config::PERIOD_US_MAX))]
    period_us: Option<u64>,
    /// New quota per period in microseconds.
    #[arg(long, conflicts_with = "no_quota",
          value_parser = value_parser!(u64).range(config::QUOTA_US_MIN..=config::PERIOD_US_MAX))]
    quota_us: Option<u64>,
    /// Remove the bandwidth limit.
    #[arg(long)]
    no_quota: bool,
    /// New FIFO class bound.
    #[arg(long, allow_negative_numbers = true, value_parser = value_parser!(i32).range(-20..=20))]
    fifo_below_nice: Option<i32>,
    /// New starvation guard in milliseconds.
    #[arg(long, value_parser = value_parser!(u64).range(config::GUARD_MS_MIN..=config::GUARD_MS_MAX))]
    guard_ms: Option<u64>,
    /// New smooth-mode sub-period bound in microseconds (0 = off).
    #[arg(long)]
    max_stall_us: Option<u64>,
    /// Limit a cgroup (PATH=QUOTA/PERIOD[/BURST]) or lift its limit
    /// (PATH=max). Repeatable.
    #[arg(long = "cgroup", value_name = "PATH=QUOTA/PERIOD[/BURST]|PATH=max")]
    cgroups: Vec<cgroups::CgroupArg>,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || !(0.0..=3600.0).contains(&v) {
        return Err(format!("{s} is out of range: use 0 (off) to 3600 seconds"));
    }
    Ok(v)
}

fn parse_trace_duration(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || !(0.01..=trace::MAX_DURATION_S).contains(&v) {
        return Err(format!(
            "{s} is out of range: trace 0.01 to {} seconds",
            trace::MAX_DURATION_S
        ));
    }
    Ok(v)
}

impl TraceOpts {
    fn request(&self) -> trace::Request {
        trace::Request {
            duration: Duration::from_secs_f64(self.duration),
            png: self
                .png
                .clone()
                .unwrap_or_else(|| trace::default_png(&self.out)),
            out: self.out.clone(),
            rows: self.rows as usize,
            max_events: self.max_events as usize,
        }
    }
}

impl RunOpts {
    /// The rows of each kind the statistics show.
    fn top(&self) -> stats::Top {
        stats::Top {
            tasks: self.top,
            cgroups: self.top_cgroups,
        }
    }

    fn tunables(&self) -> Tunables {
        Tunables {
            slice_us: self.slice_us.unwrap_or_else(|| {
                config::default_slice_us(sysfs::online_cpus()).max(self.slice_min_us)
            }),
            slice_min_us: self.slice_min_us,
            slice_mode: self.slice_mode,
            period_us: self.period_us,
            quota_us: self.quota_us,
            guard_ms: self.guard_ms,
            fifo_below_nice: self.fifo_below_nice,
            max_stall_us: self.max_stall_us,
            ..Default::default()
        }
    }
}

impl SetOpts {
    fn update(&self) -> config::Update {
        config::Update {
            slice_us: self.slice_us,
            slice_min_us: self.slice_min_us,
            slice_mode: self.slice_mode,
            period_us: self.period_us,
            quota_us: self.quota_us,
            no_quota: self.no_quota,
            guard_ms: self.guard_ms,
            fifo_below_nice: self.fifo_below_nice,
            max_stall_us: self.max_stall_us,
        }
    }
}

/// Exit like clap does for a bad combination of options (status 2).
fn usage_error(msg: &str) -> ! {
    Opts::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

fn preflight() -> Result<(), String> {
    let dir = Path::new(sysfs::SCHED_EXT_DIR);
    sysfs::check_sched_ext(dir, &sysfs::kernel_release())?;
    // SAFETY: geteuid() has no preconditions.
    sysfs::check_root(unsafe { libc::geteuid() })?;
    sysfs::check_caps(sysfs::effective_caps())?;
    sysfs::check_no_other_scheduler(dir)
}

/// Ctrl-C and SIGTERM set the returned flag.
fn shutdown_flag() -> Result<Arc<AtomicBool>> {
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the Ctrl-C/SIGTERM handler")?;
    Ok(shutdown)
}

fn run(opts: &RunOpts) -> Result<ExitCode> {
    if opts.help_stats {
        stats::server_data(opts.top()).describe_meta(&mut std::io::stdout(), None)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(secs) = opts.monitor {
        if secs == 0.0 {
            usage_error("--monitor needs an interval above 0 seconds");
        }
        stats::monitor(
            Duration::from_secs_f64(secs),
            opts.json,
            opts.top(),
            &*shutdown_flag()?,
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(msg) = opts.tunables().validate() {
        usage_error(&msg);
    }
    let mut limits = cgroups::resolve(&opts.cgroups)?;
    preflight().map_err(|m| anyhow!(m))?;
    libbpf_log::init(opts.verbose);

    let shutdown = shutdown_flag()?;
    // The stats socket, once attached (a second instance that fails its
    // checks never takes over the socket of the running one).
    let mut server: Option<Option<stats::Server>> = None;

    // Restart loop: a restartable exit (CPU hotplug) re-attaches with the
    // configuration in force, including changes made with `set`.
    let mut open_object = MaybeUninit::uninit();
    let mut tunables = opts.tunables();
    loop {
        let mut sched = Scheduler::init(opts, tunables.clone(), limits, &mut open_object)?;
        if server.is_none() {
            server = Some(
                stats::Server::launch(opts.top())
                    .map_err(|e| {
                        warn!("statistics socket unavailable ({e:#}); --monitor will not work")
                    })
                    .ok(),
            );
        }
        let channels = server.as_ref().and_then(|s| s.as_ref()?.channels());
        let end = sched.run(&shutdown, channels.as_ref())?;
        tunables = sched.tunables.clone();
        limits = std::mem::take(&mut sched.cgroups);
        drop(sched);
        match end {
            RunEnd::Shutdown => return Ok(ExitCode::SUCCESS),
            RunEnd::Restart if shutdown.load(Ordering::Relaxed) => {
                return Ok(ExitCode::SUCCESS);
            }
            RunEnd::Restart => info!("the kernel asked for a restart; re-attaching"),
        }
    }
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    let _ = simplelog::TermLogger::init(
        simplelog::LevelFilter::Info,
        simplelog::ConfigBuilder::new()
            .set_time_level(simplelog::LevelFilter::Error)
            .set_location_level(simplelog::LevelFilter::Off)
            .set_target_level(simplelog::LevelFilter::Off)
            .set_thread_level(simplelog::LevelFilter::Off)
            .build(),
        simplelog::TerminalMode::Stderr,
        simplelog::ColorChoice::Never,
    );

    let res = match &opts.cmd {
        None => run(&opts.run),
        Some(Cmd::Set(s)) => control::set(&s.update(), &s.cgroups).map(|()| ExitCode::SUCCESS),
        Some(Cmd::Show) => control::show().map(|()| ExitCode::SUCCESS),
        Some(Cmd::Trace(t)) => shutdown_flag()
            .and_then(|stop| trace::run(&t.request(), &stop))
            .map(|()| ExitCode::SUCCESS),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            if let Some(control::InvalidUpdate(msg)) = e.downcast_ref() {
                usage_error(msg);
            }
            eprintln!("{SCHEDULER_NAME}: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
