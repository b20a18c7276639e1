// SPDX-License-Identifier: GPL-2.0
// Copyright (c) 2026 The scx_fairquota authors
//
// This software may be used and distributed according to the terms of the
// GNU General Public License version 2.
//! The scheduler's lifecycle: open, configure and load the BPF object,
//! attach it, print statistics while it runs, detach and report why it
//! ended.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Read;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use crossbeam::channel::{Receiver, Sender, TryRecvError};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_utils::{compat, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};

use crate::cgroups::{self, Limited};
use crate::config::{self, Tunables};
use crate::stats::{self, CgroupSample, Metrics, Snapshot, TaskSample, Top, Totals};
use crate::{BpfSkel, BpfSkelBuilder};
use crate::{RunOpts, SCHEDULER_NAME, bpf_intf, control, libbpf_log, priority, sysfs, topology};

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    struct_ops: Option<libbpf_rs::Link>,
    task_iter: libbpf_rs::Link,
    opts: &'a RunOpts,
    pub tunables: Tunables,
    /// Limited cgroups by id (from --cgroup and `set --cgroup`).
    pub cgroups: BTreeMap<u64, Limited>,
    /// Stats read errors already reported (each kind once).
    stats_errors: HashSet<String>,
    /// Limits the BPF side refused (`cg_full`) at the last warning.
    cg_refused: u64,
}

/// The stats server's side of the scheduler: snapshots out, requests in.
pub type StatsChannels = (Sender<Snapshot>, Receiver<()>);

/// How a run of the scheduler ended without an error.
pub enum RunEnd {
    /// Ctrl-C or SIGTERM: detached on request.
    Shutdown,
    /// The kernel asked for a restart (e.g. a CPU went on- or offline).
    Restart,
}

impl<'a> Scheduler<'a> {
    pub fn init(
        opts: &'a RunOpts,
        mut tunables: Tunables,
        cgroups: BTreeMap<u64, Limited>,
        open_object: &'a mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        info!(
            "{SCHEDULER_NAME} {} starting: {tunables}",
            env!("CARGO_PKG_VERSION")
        );
        let topo = topology::read()?;
        info!("topology: {topo}");
        let bw_ops =
            compat::struct_has_field("sched_ext_ops", "cgroup_set_bandwidth").unwrap_or(false);
        if let Some(note) = cgroups::kernel_cpu_max_note(bw_ops, &sysfs::kernel_release()) {
            warn!("{note}");
        }

        // Open and load at nice -20 where allowed: the verifier runs in
        // this thread and would otherwise queue behind a busy host's load.
        let load_prio = priority::Raised::new().context("reading the daemon's nice value")?;
        let load_start = Instant::now();

        // Open the BPF object.
        // (No obj_builder.debug(): it would replace libbpf_log's callback.)
        let skel_builder = BpfSkelBuilder::default();
        let mut skel = scx_ops_open!(skel_builder, open_object, fairquota_ops, None)?;
        skel.struct_ops.fairquota_ops_mut().exit_dump_len = opts.exit_dump_len;
        // Wakeups to another CPU are queued to it (an IPI) where the
        // kernel would for CFS: 0 on kernels without the flag.
        skel.struct_ops.fairquota_ops_mut().flags |= *compat::SCX_OPS_ALLOW_QUEUED_WAKEUP;
        if opts.verifier_stats {
            // BPF_LOG_STATS: the verifier's totals only, never its trace.
            use libbpf_rs::skel::OpenSkel;
            for mut prog in skel.open_object_mut().progs_mut() {
                prog.set_log_level(4);
            }
        }
        let rodata = skel
            .maps
            .rodata_data
            .as_mut()
            .ok_or_else(|| anyhow!("the BPF object has no rodata"))?;
        rodata.test_verifier_reject = opts.test_verifier_reject;
        rodata.test_init_fail = opts.test_init_fail;
        rodata.test_lose_cg_timers = opts.test_lose_cg_timers;
        rodata.test_lose_llc_timers = opts.test_lose_llc_timers;
        rodata.nr_llcs = topo.nr_llcs();
        for (cpu, llc) in topo.cpu_llc.iter().enumerate() {
            rodata.cpu_llc[cpu] = *llc;
        }
        for (cpu, next) in topo.llc_next.iter().enumerate() {
            rodata.cpu_llc_next[cpu] = *next;
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
        info!(
            "BPF program verified and loaded in {:.1}s {}",
            load_start.elapsed().as_secs_f64(),
            load_prio.describe()
        );
        drop(load_prio);
        if opts.verifier_stats {
            let stats = libbpf_log::take_verifier_stats();
            for line in libbpf_log::format_verifier_stats(&stats) {
                info!("{line}");
            }
        }

        // Tell the scheduler who the daemon is (its init-namespace tgid).
        skel.progs
            .register_daemon
            .test_run(libbpf_rs::ProgramInput::default())
            .context("running the register_daemon BPF program")?;

        // Configure before attaching, so the first decision uses it.
        for (id, l) in &cgroups {
            cgroups::write_limit(&skel.maps.cgroup_limits, *id, l)?;
            info!("cgroup limit: {l}");
        }
        tunables.nr_cgroups = cgroups.len() as u32;
        tunables.cgroup_gen += 1;
        {
            let _lock = control::Lock::config()?;
            config_maps(&skel).write(&tunables)?;
        }
        control::pin_maps(&[
            (&skel.maps.config_slots, control::PIN_SLOTS),
            (&skel.maps.config_seq, control::PIN_SEQ),
            (&skel.maps.cgroup_limits, control::PIN_CG_LIMITS),
            (&skel.maps.cgroup_states, control::PIN_CG_STATES),
            (&skel.maps.trace_events, control::PIN_TRACE_EVENTS),
            (&skel.maps.trace_ctl, control::PIN_TRACE_CTL),
        ])?;

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
            cgroups,
            stats_errors: HashSet::new(),
            cg_refused: 0,
        };

        // Attach: from here on the kernel schedules through us.
        // If the kernel refuses (ops.init() failed, e.g. it could not
        // create the per-LLC queues or timers), it says why in the exit
        // info; nothing is attached and the default scheduler stays.
        let attached = scx_ops_attach!(sched.skel, fairquota_ops);
        match attached {
            Ok(link) => sched.struct_ops = Some(link),
            Err(e) => {
                let why = match uei_report!(&sched.skel, uei) {
                    Err(reason) => format!("{reason:#}"),
                    Ok(_) => format!("{e:#}"),
                };
                bail!(
                    "the kernel refused to enable the scheduler: {why}; nothing was attached and \
                     the default scheduler is still in charge"
                );
            }
        }
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

    /// Follow the limited cgroups: limits added or removed with `set`,
    /// and cgroups removed from the hierarchy (their limits are forgotten,
    /// with one message each).
    fn sync_cgroups(&mut self) {
        let cli = cgroups::read_limits(&self.skel.maps.cgroup_limits);
        let kernel = cgroups::read_limits(&self.skel.maps.cgroup_kernel_limits);
        let mut merged: Vec<(u64, cgroups::Limit, bool)> =
            kernel.iter().map(|(id, l)| (*id, *l, true)).collect();
        merged.retain(|(id, _, _)| !cli.contains_key(id));
        merged.extend(cli.iter().map(|(id, l)| (*id, *l, false)));
        self.cgroups
            .retain(|id, _| cli.contains_key(id) || kernel.contains_key(id));
        // The paths of new limits in one walk of the hierarchy: one walk
        // per id took O(cgroups) each, minutes for thousands of cpu.max.
        let new: BTreeSet<u64> = merged
            .iter()
            .map(|(id, _, _)| *id)
            .filter(|id| !self.cgroups.contains_key(id))
            .collect();
        let mut paths = cgroups::find_paths(&new);
        for (id, limit, from_kernel) in merged {
            let path = match self.cgroups.get(&id) {
                Some(l) => l.path.clone(),
                None => paths.remove(&id).unwrap_or_else(|| format!("(id {id})")),
            };
            self.cgroups.insert(
                id,
                Limited {
                    path,
                    limit,
                    from_kernel,
                },
            );
        }
        if let Ok(t) = self.totals() {
            let refused = t.get(bpf_intf::counter_idx_CNT_CG_FULL);
            if let Some(w) = cgroups::limits_full_warning(refused, self.cg_refused) {
                warn!("{w}");
                self.cg_refused = refused;
            }
        }
        let gone: Vec<u64> = self
            .cgroups
            .iter()
            .filter(|(_, l)| !l.from_kernel && !cgroups::cgroup_dir(&l.path).is_dir())
            .map(|(id, _)| *id)
            .collect();
        if gone.is_empty() {
            return;
        }
        let Ok(_lock) = control::Lock::config() else {
            return;
        };
        for id in gone {
            if let Some(l) = self.cgroups.remove(&id) {
                info!("cgroup {} was removed; its limit is forgotten", l.path);
            }
            cgroups::remove(
                &self.skel.maps.cgroup_limits,
                &self.skel.maps.cgroup_states,
                id,
            );
        }
        let maps = config_maps(&self.skel);
        if let Ok(mut t) = maps.read() {
            t.cgroup_gen += 1;
            t.nr_cgroups = self.cgroups.len() as u32;
            if maps.write(&t).is_ok() {
                self.tunables = t;
            }
        }
    }

    /// Cumulative values now. A stats read error is reported (once per
    /// kind) and leaves that part empty; it never stops the scheduler.
    fn snapshot(&mut self, start: Instant, with_tasks: bool) -> Snapshot {
        let totals = self
            .totals()
            .unwrap_or_else(|e| self.stats_error_value("counters", e));
        let tasks = if with_tasks {
            self.tasks()
                .unwrap_or_else(|e| self.stats_error_value("tasks", e))
        } else {
            Vec::new()
        };
        let cgroups = self
            .cgroups
            .iter()
            .map(|(id, l)| CgroupSample {
                id: *id,
                limited: l.clone(),
                usage: cgroups::read_usage(&self.skel.maps.cgroup_states, *id),
            })
            .collect();
        Snapshot {
            at_ns: start.elapsed().as_nanos() as u64,
            totals,
            tasks,
            cgroups,
        }
    }

    fn stats_error_value<T: Default>(&mut self, what: &str, e: anyhow::Error) -> T {
        self.stats_error(what, e);
        T::default()
    }

    /// Run until shut down or ejected: follow reconfigurations and cgroup
    /// changes, answer the stats socket's requests (`stats`: its
    /// channels) and print the metrics every `--stats` seconds.
    pub fn run(&mut self, shutdown: &AtomicBool, stats: Option<&StatsChannels>) -> Result<RunEnd> {
        let start = Instant::now();
        let interval = Duration::from_secs_f64(self.opts.stats_interval);
        let tick = Duration::from_millis(100);
        let mut last_stats = Instant::now();
        let mut prev = Snapshot::default();
        let mut last_sync = Instant::now();

        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            // Poll, do not block on the channel: the daemon's threads run
            // from the urgent queue, and a blocking receive with a timeout
            // measured as a busy loop under load (a CPU of its own).
            std::thread::sleep(tick);
            while let Some((res, req)) = stats {
                match req.try_recv() {
                    Ok(()) => {
                        let snap = self.snapshot(start, true);
                        res.send(snap).context("answering a stats request")?;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => bail!("the stats server stopped"),
                }
            }
            self.notice_config_change();
            if last_sync.elapsed() >= Duration::from_secs(1) {
                last_sync = Instant::now();
                self.sync_cgroups();
            }
            if interval.is_zero() || last_stats.elapsed() < interval {
                continue;
            }
            last_stats = Instant::now();
            let cur = self.snapshot(start, true);
            stats::print_metrics(
                &Metrics::between(&prev, &cur, self.opts.top()),
                self.opts.json,
            );
            prev = cur;
        }

        let requested = shutdown.load(Ordering::Relaxed);
        self.sync_cgroups();
        // Read before detaching: on detach the kernel exits every cgroup
        // from the scheduler, which drops the cpu.max groups' state.
        let last = self.snapshot(start, false);

        // Detach; the kernel returns every task to its default scheduler.
        let _ = self.struct_ops.take();
        let top = Top {
            tasks: 0,
            ..self.opts.top()
        };
        let summary = Metrics::between(&Snapshot::default(), &last, top);
        if self.opts.json {
            stats::print_metrics(&summary, true);
        } else {
            print!("{}", summary.format_final());
        }

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
        control::unpin_maps();
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
