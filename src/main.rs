// SPDX-License-Identifier: GPL-2.0
// Copyright (c) 2026 The scx_fairquota authors
//
// This software may be used and distributed according to the terms of the
// GNU General Public License version 2.
mod bpf_skel;
pub use bpf_skel::*;
pub mod bpf_intf;
mod config;
mod control;
mod libbpf_log;
mod stats;
mod sysfs;
mod topology;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::mem::MaybeUninit;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::{CommandFactory, Parser, value_parser};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};

use config::{SliceMode, Tunables};
use stats::{TaskSample, Totals};

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
}

#[derive(Debug, clap::Args)]
struct RunOpts {
    /// RR time slice in microseconds.
    #[arg(long, default_value_t = config::DEFAULT_SLICE_US,
          value_parser = value_parser!(u64).range(config::SLICE_US_MIN..=config::SLICE_US_MAX))]
    slice_us: u64,

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

    /// Starvation guard: after RR tasks have waited this many milliseconds
    /// behind a FIFO task on a CPU, one RR task gets a slice there.
    #[arg(long, default_value_t = config::DEFAULT_GUARD_MS,
          value_parser = value_parser!(u64).range(config::GUARD_MS_MIN..=config::GUARD_MS_MAX))]
    guard_ms: u64,

    /// Print statistics every this many seconds (0 = off).
    #[arg(long, default_value_t = 1.0, value_parser = parse_interval)]
    stats_interval: f64,

    /// Number of tasks shown in the statistics table.
    #[arg(long, default_value_t = 10)]
    top: usize,

    /// Length of the debug dump the kernel writes when it ejects the
    /// scheduler (0 = kernel default).
    #[arg(long, default_value_t = 0)]
    exit_dump_len: u32,

    /// Print libbpf's messages (including the verifier log).
    #[arg(short, long)]
    verbose: bool,

    /// Test hook: make the BPF verifier reject the scheduler.
    #[arg(long, hide = true)]
    test_verifier_reject: bool,
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

impl RunOpts {
    fn tunables(&self) -> Tunables {
        Tunables {
            slice_us: self.slice_us,
            slice_min_us: self.slice_min_us,
            slice_mode: self.slice_mode,
            period_us: self.period_us,
            quota_us: self.quota_us,
            guard_ms: self.guard_ms,
            fifo_below_nice: self.fifo_below_nice,
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
        }
    }
}

/// Exit like clap does for a bad combination of options (status 2).
fn usage_error(msg: &str) -> ! {
    Opts::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    struct_ops: Option<libbpf_rs::Link>,
    task_iter: libbpf_rs::Link,
    opts: &'a RunOpts,
    tunables: Tunables,
    /// Stats read errors already reported (each kind once).
    stats_errors: HashSet<String>,
}

/// How a run of the scheduler ended without an error.
enum RunEnd {
    /// Ctrl-C or SIGTERM: detached on request.
    Shutdown,
    /// The kernel asked for a restart (e.g. a CPU went on- or offline).
    Restart,
}

impl<'a> Scheduler<'a> {
    fn init(
        opts: &'a RunOpts,
        tunables: Tunables,
        open_object: &'a mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        info!(
            "{SCHEDULER_NAME} {} starting: {tunables}",
            env!("CARGO_PKG_VERSION")
        );
        let topo = topology::read()?;
        info!("topology: {topo}");

        // Open the BPF object.
        // (No obj_builder.debug(): it would replace libbpf_log's callback.)
        let skel_builder = BpfSkelBuilder::default();
        let mut skel = scx_ops_open!(skel_builder, open_object, fairquota_ops, None)?;
        skel.struct_ops.fairquota_ops_mut().exit_dump_len = opts.exit_dump_len;
        let rodata = skel
            .maps
            .rodata_data
            .as_mut()
            .ok_or_else(|| anyhow!("the BPF object has no rodata"))?;
        rodata.test_verifier_reject = opts.test_verifier_reject;
        rodata.nr_llcs = topo.nr_llcs();
        for (cpu, llc) in topo.cpu_llc.iter().enumerate() {
            rodata.cpu_llc[cpu] = *llc;
        }
        for (llc, n) in topo.llc_nr_cpus.iter().enumerate() {
            rodata.llc_nr_cpus[llc] = *n;
        }

        // Load it: this is where the verifier runs.
        let skel = scx_ops_load!(skel, fairquota_ops, uei).map_err(|e| {
            match libbpf_log::last_verifier_excerpt() {
                Some(log) => anyhow!(
                    "the kernel's BPF verifier rejected the scheduler ({e:#}); nothing was \
                     attached. The end of the verifier log:\n{log}\
                     Run with --verbose for the whole log and report it with `uname -r`"
                ),
                None => e,
            }
        })?;

        // Tell the scheduler who the daemon is (its init-namespace tgid).
        skel.progs
            .register_daemon
            .test_run(libbpf_rs::ProgramInput::default())
            .context("running the register_daemon BPF program")?;

        // Configure before attaching, so the first decision uses it.
        {
            let _lock = control::ConfigLock::take()?;
            config_maps(&skel).write(&tunables)?;
        }
        control::pin_config(&skel.maps.config_slots, &skel.maps.config_seq)?;

        // The task iterator the statistics are read through.
        let task_iter = skel
            .progs
            .dump_tasks
            .attach()
            .context("attaching the dump_tasks task iterator")?;

        let mut sched = Self {
            skel,
            struct_ops: None,
            task_iter,
            opts,
            tunables,
            stats_errors: HashSet::new(),
        };

        // Attach: from here on the kernel schedules through us.
        sched.struct_ops = Some(scx_ops_attach!(sched.skel, fairquota_ops)?);
        info!("{SCHEDULER_NAME} attached; reconfigure with `{SCHEDULER_NAME} set --help`");
        Ok(sched)
    }

    fn totals(&self) -> Result<Totals> {
        let per_cpu = self
            .skel
            .maps
            .counters
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)?
            .ok_or_else(|| anyhow!("counters map is empty"))?;
        let values: Vec<bpf_intf::counters> = per_cpu
            .iter()
            .filter_map(|b| config::from_bytes(b))
            .collect();
        Ok(Totals::sum(&values))
    }

    /// Every task we schedule, in one pass of the BPF task iterator.
    fn tasks(&self) -> Result<Vec<TaskSample>> {
        let mut buf = Vec::with_capacity(64 * 1024);
        libbpf_rs::Iter::new(&self.task_iter)
            .context("creating a task iterator")?
            .read_to_end(&mut buf)
            .context("reading the task iterator")?;
        Ok(stats::parse_task_stats(&buf))
    }

    /// Report a stats read error once per kind; stats never stop the
    /// scheduler.
    fn stats_error(&mut self, what: &str, e: anyhow::Error) {
        let msg = format!("{what}: {e:#}");
        if self.stats_errors.insert(msg.clone()) {
            warn!("statistics unavailable ({msg}); the scheduler keeps running");
        }
    }

    /// Log a reconfiguration made with `scx_fairquota set`.
    fn notice_config_change(&mut self) {
        if let Ok(t) = config_maps(&self.skel).read()
            && t != self.tunables
        {
            info!("reconfigured: {t}");
            self.tunables = t;
        }
    }

    fn print_stats(
        &mut self,
        start: Instant,
        elapsed: Duration,
        prev_totals: &mut Totals,
        prev_tasks: &mut HashMap<i32, TaskSample>,
    ) {
        let totals = match self.totals() {
            Ok(t) => t,
            Err(e) => return self.stats_error("counters", e),
        };
        let tasks = match self.tasks() {
            Ok(t) => t,
            Err(e) => {
                self.stats_error("tasks", e);
                Vec::new()
            }
        };
        let rows = stats::top_tasks(&tasks, prev_tasks, elapsed.as_nanos() as u64, self.opts.top);
        println!(
            "[fairquota] t={:.1}s tasks={} {}",
            start.elapsed().as_secs_f64(),
            tasks.len(),
            totals.format(Some(&totals.delta(prev_totals)))
        );
        println!("{}", stats::TABLE_HEADER);
        for row in &rows {
            println!("{}", stats::format_row(row));
        }
        *prev_totals = totals;
        *prev_tasks = tasks.into_iter().map(|s| (s.pid, s)).collect();
    }

    fn run(&mut self, shutdown: &AtomicBool) -> Result<RunEnd> {
        let start = Instant::now();
        let interval = Duration::from_secs_f64(self.opts.stats_interval);
        let mut last_stats = Instant::now();
        let mut prev_tasks: HashMap<i32, TaskSample> = HashMap::new();
        let mut prev_totals = Totals::default();

        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            std::thread::sleep(Duration::from_millis(100));
            self.notice_config_change();
            if interval.is_zero() || last_stats.elapsed() < interval {
                continue;
            }
            let elapsed = last_stats.elapsed();
            last_stats = Instant::now();
            self.print_stats(start, elapsed, &mut prev_totals, &mut prev_tasks);
        }

        let requested = shutdown.load(Ordering::Relaxed);
        let final_totals = self.totals().unwrap_or_default();

        // Detach; the kernel returns every task to its default scheduler.
        let _ = self.struct_ops.take();
        println!("[fairquota] final: {}", final_totals.format(None));

        match uei_report!(&self.skel, uei) {
            Err(e) => Err(e.context(
                "the kernel ejected the scheduler and fell back to its default scheduler",
            )),
            Ok(uei) if uei.should_restart() => Ok(RunEnd::Restart),
            Ok(_) if !requested => {
                bail!(
                    "the kernel unloaded the scheduler (see the reason above) and fell back to its default scheduler"
                )
            }
            Ok(_) => Ok(RunEnd::Shutdown),
        }
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        control::unpin_config();
        info!("unregistered {SCHEDULER_NAME}");
    }
}

fn config_maps<'b>(
    skel: &'b BpfSkel<'_>,
) -> control::ConfigMaps<'b, libbpf_rs::Map<'b>, libbpf_rs::Map<'b>> {
    control::ConfigMaps {
        slots: &skel.maps.config_slots,
        seq: &skel.maps.config_seq,
    }
}

fn preflight() -> Result<(), String> {
    let dir = Path::new(sysfs::SCHED_EXT_DIR);
    sysfs::check_sched_ext(dir, &sysfs::kernel_release())?;
    // SAFETY: geteuid() has no preconditions.
    sysfs::check_root(unsafe { libc::geteuid() })?;
    sysfs::check_no_other_scheduler(dir)
}

fn run(opts: &RunOpts) -> Result<ExitCode> {
    if let Err(msg) = opts.tunables().validate() {
        usage_error(&msg);
    }
    preflight().map_err(|m| anyhow!(m))?;
    libbpf_log::init(opts.verbose);

    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the Ctrl-C/SIGTERM handler")?;

    // Restart loop: a restartable exit (CPU hotplug) re-attaches with the
    // configuration in force, including changes made with `set`.
    let mut open_object = MaybeUninit::uninit();
    let mut tunables = opts.tunables();
    loop {
        let mut sched = Scheduler::init(opts, tunables.clone(), &mut open_object)?;
        let end = sched.run(&shutdown)?;
        tunables = sched.tunables.clone();
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
        Some(Cmd::Set(s)) => control::set(&s.update()).map(|()| ExitCode::SUCCESS),
        Some(Cmd::Show) => control::show().map(|()| ExitCode::SUCCESS),
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
