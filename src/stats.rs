// SPDX-License-Identifier: GPL-2.0
//! Statistics. The daemon reads snapshots of cumulative values from the
//! BPF maps (global counters, every task through the task iterator, every
//! limited cgroup); [`Metrics::between`] turns two snapshots into the one
//! statistics struct that feeds the printed table, the JSON and the
//! scx_stats socket (`--monitor`, `--help-stats`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use crossbeam::channel::{Receiver, Sender};

use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;
use crate::cgroups::{Limited, Usage};

/// Number of global counters (`enum counter_idx` in bpf/intf.h).
const NR_COUNTERS: usize = bpf_intf::counter_idx_NR_COUNTERS as usize;

/// Global counters, summed over CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals(pub [u64; NR_COUNTERS]);

/// By hand: the standard library's `Default` for arrays stops at 32
/// elements, and a 33rd counter must not break the build.
impl Default for Totals {
    fn default() -> Self {
        Totals([0; NR_COUNTERS])
    }
}

impl Totals {
    /// Sum per-CPU `struct counters` values.
    pub fn sum<'a>(per_cpu: impl IntoIterator<Item = &'a bpf_intf::counters>) -> Totals {
        let mut t = Totals::default();
        for c in per_cpu {
            for (i, v) in t.0.iter_mut().enumerate() {
                *v = v.wrapping_add(c.cnt[i]);
            }
        }
        t
    }

    /// Counts since `prev`.
    pub fn delta(&self, prev: &Totals) -> Totals {
        let mut d = Totals::default();
        for (i, v) in d.0.iter_mut().enumerate() {
            *v = self.0[i].wrapping_sub(prev.0[i]);
        }
        d
    }

    pub fn get(&self, idx: u32) -> u64 {
        self.0[idx as usize]
    }
}

/// One task as the BPF task iterator reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSample {
    pub pid: i32,
    pub tgid: u32,
    pub comm: String,
    pub nice: i32,
    pub weight: u32,
    pub fifo: bool,
    pub runtime_ns: u64,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_ns: u64,
    /// Longest wait from runnable (or released) to running.
    pub max_wait_ns: u64,
}

impl TaskSample {
    pub fn from_stat(c: &bpf_intf::task_stat) -> TaskSample {
        TaskSample {
            pid: c.pid,
            tgid: c.tgid,
            comm: comm_string(&c.comm.map(|b| b as u8)),
            nice: c.nice,
            weight: c.weight,
            fifo: c.class == bpf_intf::task_class_CLASS_FIFO,
            runtime_ns: c.runtime_ns,
            nr_periods: c.nr_periods,
            nr_throttled: c.nr_throttled,
            throttled_ns: c.throttled_ns,
            max_wait_ns: c.max_wait_ns,
        }
    }
}

/// A task's comm as the kernel stores it (NUL-padded bytes).
pub fn comm_string(comm: &[u8]) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}

/// Decode the iterator's output: a sequence of `struct task_stat`.
pub fn parse_task_stats(buf: &[u8]) -> Vec<TaskSample> {
    buf.chunks_exact(std::mem::size_of::<bpf_intf::task_stat>())
        .filter_map(crate::config::from_bytes::<bpf_intf::task_stat>)
        .map(|s| TaskSample::from_stat(&s))
        .collect()
}

/// A limited cgroup and its cumulative usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupSample {
    pub id: u64,
    pub limited: Limited,
    pub usage: Usage,
}

/// Cumulative values at one moment: what the daemon reads from BPF.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Nanoseconds since the scheduler attached.
    pub at_ns: u64,
    pub totals: Totals,
    pub tasks: Vec<TaskSample>,
    pub cgroups: Vec<CgroupSample>,
}

/// One task's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "a task the scheduler runs")]
pub struct TaskStats {
    #[stat(desc = "thread id")]
    pub pid: i32,
    #[stat(desc = "process id (thread group)")]
    pub tgid: u32,
    #[stat(desc = "command name")]
    pub comm: String,
    #[stat(desc = "nice value")]
    pub nice: i32,
    #[stat(desc = "weight (100 at nice 0, as sched_ext scales CFS weights)")]
    pub weight: u32,
    #[stat(desc = "class: FIFO (nice below --fifo-below-nice) or RR")]
    pub class: String,
    #[stat(desc = "CPU used in the interval, % of one CPU")]
    pub cpu_pct: f64,
    #[stat(desc = "CPU time used under this scheduler, ns")]
    pub runtime_ns: u64,
    #[stat(desc = "bandwidth periods with runtime (per-task quota)")]
    pub nr_periods: u64,
    #[stat(desc = "times the task ran out of its quota")]
    pub nr_throttled: u64,
    #[stat(desc = "time spent throttled by its quota, ns")]
    pub throttled_ns: u64,
    #[stat(desc = "longest wait from runnable (or released) to running, ns")]
    pub max_wait_ns: u64,
}

/// One limited cgroup's row, in cpu.stat's vocabulary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "a limited cgroup, with the fields of its cpu.stat")]
pub struct CgroupStats {
    #[stat(desc = "path under /sys/fs/cgroup")]
    pub path: String,
    #[stat(desc = "where the limit comes from: cli (--cgroup, set) or cpu.max")]
    pub source: String,
    #[stat(desc = "quota per period, us")]
    pub quota_us: u64,
    #[stat(desc = "period, us")]
    pub period_us: u64,
    #[stat(desc = "burst (cpu.max.burst), us")]
    pub burst_us: u64,
    #[stat(desc = "CPU used in the interval, % of one CPU")]
    pub cpu_pct: f64,
    #[stat(desc = "CPU time used by the group's tasks, us (cpu.stat usage_usec)")]
    pub usage_usec: u64,
    #[stat(desc = "periods with runtime (cpu.stat nr_periods)")]
    pub nr_periods: u64,
    #[stat(desc = "periods that ran out of quota (cpu.stat nr_throttled)")]
    pub nr_throttled: u64,
    #[stat(desc = "time the group was throttled, us (cpu.stat throttled_usec)")]
    pub throttled_usec: u64,
    #[stat(desc = "periods that drew on saved burst (cpu.stat nr_bursts)")]
    pub nr_bursts: u64,
    #[stat(desc = "runtime drawn from burst, us (cpu.stat burst_usec)")]
    pub burst_usec: u64,
}

/// The statistics of scx_fairquota over one interval: what `--stats`
/// prints, `--monitor` reads from the stats socket and `--json` writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top, desc = "scx_fairquota statistics over one interval")]
pub struct Metrics {
    #[stat(desc = "seconds since the scheduler attached")]
    pub uptime_s: f64,
    #[stat(desc = "length of the interval the counts cover, s")]
    pub interval_s: f64,
    #[stat(desc = "tasks the scheduler runs")]
    pub nr_tasks: u64,
    #[stat(desc = "FIFO tasks started")]
    pub fifo_dispatch: u64,
    #[stat(desc = "RR tasks started")]
    pub rr_dispatch: u64,
    #[stat(desc = "tasks that ran out of their per-task quota")]
    pub throttles: u64,
    #[stat(desc = "RR tasks that waited past the guard (made urgent)")]
    pub guard: u64,
    #[stat(desc = "FIFO tasks that waited past 1 s (made urgent)")]
    pub fifo_rotate: u64,
    #[stat(desc = "queued tasks that preempted a running one")]
    pub wake_preempt: u64,
    #[stat(desc = "slices ended between ticks by the slice timer")]
    pub slice_timer: u64,
    #[stat(desc = "last tasks of a CPU re-queued with a follow-up kick")]
    pub enq_last: u64,
    #[stat(desc = "RR tasks moved to a less loaded LLC")]
    pub llc_pull: u64,
    #[stat(desc = "times a limited cgroup ran out of quota")]
    pub cg_throttles: u64,
    #[stat(desc = "cpu.max limits not enforced: more limited cgroups than the maps hold")]
    pub cg_full: u64,
    #[stat(desc = "cgroup release runs that kept parked tasks waiting for tokens")]
    pub cg_defer: u64,
    #[stat(desc = "CPUs going idle that found work queued meanwhile and went on")]
    pub idle_kick: u64,
    #[stat(desc = "tasks released after 20 s parked although their cgroup was throttled")]
    pub park_force: u64,
    #[stat(desc = "tasks parked on their LLC moved to their throttled cgroup's queue")]
    pub cg_adopt: u64,
    #[stat(desc = "runtime charges to a limited cgroup under the group's lock")]
    pub cg_locked: u64,
    #[stat(desc = "runtime charges held on their CPU without a lock (charged later, together)")]
    pub cg_held: u64,
    #[stat(desc = "slice timers started (turns that may end between ticks)")]
    pub slice_arm: u64,
    #[stat(desc = "tasks preempted inside an RCU read-side section, queued first")]
    pub rcu_boost: u64,
    #[stat(desc = "kernel threads (not per-CPU) that woke, queued first for one turn")]
    pub kthread_boost: u64,
    #[stat(desc = "limited cgroups whose lost release timer was re-armed")]
    pub cg_rescue: u64,
    #[stat(desc = "LLCs whose lost housekeeping timer was re-armed")]
    pub llc_rescue: u64,
    #[stat(desc = "release timer starts (LLC or cgroup) that failed; the sweeps re-arm them")]
    pub timer_fail: u64,
    #[stat(desc = "limited cgroups that left the cpu controller (removed): their queue dropped")]
    pub cg_gone: u64,
    #[stat(desc = "RR or urgent tasks a CPU took from another LLC's queue rather than go idle")]
    pub llc_steal: u64,
    #[stat(desc = "other LLCs' queues a CPU about to go idle passed over on their work hint")]
    pub hint_skip: u64,
    #[stat(desc = "housekeeping runs of the starvation guard (per LLC)")]
    pub guard_runs: u64,
    #[stat(desc = "queued tasks the guard looked at (64 per queue a run; all, 4 times a second)")]
    pub guard_looked: u64,
    #[stat(desc = "kernel threads that waited past 50 ms in a class queue (made urgent)")]
    pub kthread_guard: u64,
    #[stat(desc = "early whole-queue guard walks for a kernel thread that may be overdue")]
    pub kthread_walk: u64,
    #[stat(desc = "slice timers the kernel fired over 1 ms past their deadline (late timers)")]
    pub slice_late: u64,
    #[stat(desc = "tasks woken from a D sleep that waited past 50 ms (made urgent)")]
    pub dsleep_guard: u64,
    #[stat(desc = "RR wakeups behind FIFO work that ran at once on the CPU's RR budget")]
    pub rr_budget: u64,
    #[stat(desc = "ticks that ended a FIFO turn for a queued RR task's turn on the RR budget")]
    pub rr_budget_tick: u64,
    #[stat(desc = "FIFO tasks woken from a D sleep that went first, behind queued work")]
    pub dsleep_head: u64,
    #[stat(desc = "ticks that left a turn on for urgent work or an RR budget turn: in the kernel")]
    pub kernel_defer: u64,
    #[stat(desc = "of wake_preempt: queued on the CPU's own queue, preempting in the wakeup")]
    pub wake_local: u64,
    #[stat(desc = "FIFO tasks a tick cut in the kernel that went first, behind queued work")]
    pub kernel_head: u64,
    #[stat(desc = "cgroup charges that lost 8 races to other CPUs' and went to the tokens alone")]
    pub cg_contended: u64,
    #[stat(desc = "of slice_arm: turns that took the timer re-armed by the kick before them")]
    pub slice_chain: u64,
    #[stat(desc = "slice timers that took the untimed RR turn running when they fired")]
    pub slice_follow: u64,
    #[stat(desc = "parked tasks run because RT or DL work starved their CPU")]
    pub server_parked: u64,
    #[stat(desc = "parked tasks let go at once because they were killed (SIGKILL pending)")]
    pub killed_release: u64,
    #[stat(desc = "limited cgroups (the rows below: the busiest --top-cgroups of them)")]
    pub nr_cgroups: u64,
    #[stat(desc = "busiest tasks of the interval, busiest first")]
    pub tasks: Vec<TaskStats>,
    #[stat(desc = "busiest limited cgroups of the interval, busiest first")]
    pub cgroups: Vec<CgroupStats>,
}

/// How many rows of each kind the statistics carry (0 = all): a host with
/// tens of thousands of tasks and thousands of limited cgroups gets the
/// busiest few each interval, not a page per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Top {
    pub tasks: usize,
    pub cgroups: usize,
}

#[cfg(test)]
impl Top {
    /// Every row.
    pub const ALL: Top = Top {
        tasks: 0,
        cgroups: 0,
    };
}

/// Keep the first `top` of `rows` (0 = all).
fn keep_first<T>(rows: &mut Vec<T>, top: usize) {
    if top > 0 {
        rows.truncate(top);
    }
}

fn pct(used_ns: u64, interval_ns: u64) -> f64 {
    used_ns as f64 * 100.0 / interval_ns.max(1) as f64
}

impl Metrics {
    /// The counters in `enum counter_idx` order, by printed name.
    fn counters_mut(&mut self) -> [(&'static str, &mut u64); NR_COUNTERS] {
        [
            ("fifo_dispatch", &mut self.fifo_dispatch),
            ("rr_dispatch", &mut self.rr_dispatch),
            ("throttles", &mut self.throttles),
            ("guard", &mut self.guard),
            ("fifo_rotate", &mut self.fifo_rotate),
            ("wake_preempt", &mut self.wake_preempt),
            ("slice_timer", &mut self.slice_timer),
            ("enq_last", &mut self.enq_last),
            ("llc_pull", &mut self.llc_pull),
            ("cg_throttles", &mut self.cg_throttles),
            ("cg_full", &mut self.cg_full),
            ("cg_defer", &mut self.cg_defer),
            ("idle_kick", &mut self.idle_kick),
            ("park_force", &mut self.park_force),
            ("cg_adopt", &mut self.cg_adopt),
            ("cg_locked", &mut self.cg_locked),
            ("cg_held", &mut self.cg_held),
            ("slice_arm", &mut self.slice_arm),
            ("rcu_boost", &mut self.rcu_boost),
            ("kthread_boost", &mut self.kthread_boost),
            ("cg_rescue", &mut self.cg_rescue),
            ("llc_rescue", &mut self.llc_rescue),
            ("timer_fail", &mut self.timer_fail),
            ("cg_gone", &mut self.cg_gone),
            ("llc_steal", &mut self.llc_steal),
            ("hint_skip", &mut self.hint_skip),
            ("guard_runs", &mut self.guard_runs),
            ("guard_looked", &mut self.guard_looked),
            ("kthread_guard", &mut self.kthread_guard),
            ("kthread_walk", &mut self.kthread_walk),
            ("slice_late", &mut self.slice_late),
            ("dsleep_guard", &mut self.dsleep_guard),
            ("rr_budget", &mut self.rr_budget),
            ("rr_budget_tick", &mut self.rr_budget_tick),
            ("dsleep_head", &mut self.dsleep_head),
            ("kernel_defer", &mut self.kernel_defer),
            ("wake_local", &mut self.wake_local),
            ("kernel_head", &mut self.kernel_head),
            ("cg_contended", &mut self.cg_contended),
            ("slice_chain", &mut self.slice_chain),
            ("slice_follow", &mut self.slice_follow),
            ("server_parked", &mut self.server_parked),
            ("killed_release", &mut self.killed_release),
        ]
    }

    /// `name=count` for every counter.
    fn counters_line(&self) -> String {
        // Only the counters are copied, not the task and cgroup rows.
        let mut m = Metrics {
            tasks: Vec::new(),
            cgroups: Vec::new(),
            ..*self
        };
        let mut s = String::new();
        for (name, v) in m.counters_mut() {
            let _ = write!(s, " {name}={v}");
        }
        s
    }

    /// What happened between `prev` and `cur`: counter deltas, the
    /// `top.tasks` busiest tasks and the `top.cgroups` busiest limited
    /// cgroups of the interval (by CPU used in it). A task or cgroup not in
    /// `prev` counts everything it used as used in the interval;
    /// `Snapshot::default()` as `prev` gives totals since attach.
    pub fn between(prev: &Snapshot, cur: &Snapshot, top: Top) -> Metrics {
        let interval_ns = cur.at_ns.saturating_sub(prev.at_ns);
        let mut m = Metrics {
            uptime_s: cur.at_ns as f64 / 1e9,
            interval_s: interval_ns as f64 / 1e9,
            nr_tasks: cur.tasks.len() as u64,
            nr_cgroups: cur.cgroups.len() as u64,
            ..Default::default()
        };
        let d = cur.totals.delta(&prev.totals);
        for (i, (_, v)) in m.counters_mut().into_iter().enumerate() {
            *v = d.0[i];
        }
        let before: HashMap<i32, u64> = prev.tasks.iter().map(|t| (t.pid, t.runtime_ns)).collect();
        m.tasks = cur
            .tasks
            .iter()
            .map(|s| TaskStats {
                pid: s.pid,
                tgid: s.tgid,
                comm: s.comm.clone(),
                nice: s.nice,
                weight: s.weight,
                class: if s.fifo { "FIFO" } else { "RR" }.into(),
                cpu_pct: pct(
                    s.runtime_ns
                        .saturating_sub(*before.get(&s.pid).unwrap_or(&0)),
                    interval_ns,
                ),
                runtime_ns: s.runtime_ns,
                nr_periods: s.nr_periods,
                nr_throttled: s.nr_throttled,
                throttled_ns: s.throttled_ns,
                max_wait_ns: s.max_wait_ns,
            })
            .collect();
        m.tasks
            .sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct).then(a.pid.cmp(&b.pid)));
        keep_first(&mut m.tasks, top.tasks);
        let used_before: HashMap<u64, u64> = prev
            .cgroups
            .iter()
            .map(|c| (c.id, c.usage.usage_ns))
            .collect();
        m.cgroups = cur
            .cgroups
            .iter()
            .map(|c| {
                let (l, u) = (&c.limited, &c.usage);
                CgroupStats {
                    path: l.path.clone(),
                    source: l.source().into(),
                    quota_us: l.limit.quota_us,
                    period_us: l.limit.period_us,
                    burst_us: l.limit.burst_us,
                    cpu_pct: pct(
                        u.usage_ns
                            .saturating_sub(*used_before.get(&c.id).unwrap_or(&0)),
                        interval_ns,
                    ),
                    usage_usec: u.usage_ns / 1000,
                    nr_periods: u.nr_periods,
                    nr_throttled: u.nr_throttled,
                    throttled_usec: u.throttled_ns / 1000,
                    nr_bursts: u.nr_bursts,
                    burst_usec: u.burst_ns / 1000,
                }
            })
            .collect();
        m.cgroups.sort_by(|a, b| {
            (b.cpu_pct.total_cmp(&a.cpu_pct))
                .then(b.throttled_usec.cmp(&a.throttled_usec))
                .then_with(|| a.path.cmp(&b.path))
        });
        keep_first(&mut m.cgroups, top.cgroups);
        m
    }

    /// The line that says how many cgroup rows were left out, if any.
    fn more_cgroups(&self, out: &mut String) {
        more_line(
            out,
            self.nr_cgroups,
            self.cgroups.len(),
            "limited cgroups",
            "--top-cgroups",
        );
    }

    /// The periodic table: a counters line (after the numbers of tasks
    /// and limited cgroups), the task table, a line per limited cgroup
    /// (the busiest, as `Top` chose).
    pub fn format(&self) -> String {
        let mut out = format!(
            "[fairquota] t={:.1}s tasks={} cgroups={}{}\n{TABLE_HEADER}\n",
            self.uptime_s,
            self.nr_tasks,
            self.nr_cgroups,
            self.counters_line()
        );
        for t in &self.tasks {
            out.push_str(&t.format());
            out.push('\n');
        }
        more_line(&mut out, self.nr_tasks, self.tasks.len(), "tasks", "--top");
        for c in &self.cgroups {
            out.push_str(&c.format());
            out.push('\n');
        }
        self.more_cgroups(&mut out);
        out
    }

    /// The summary at exit (`self` covers the whole run): counters and
    /// cgroups, no task table.
    pub fn format_final(&self) -> String {
        let mut out = format!("[fairquota] final:{}\n", self.counters_line());
        for c in &self.cgroups {
            out.push_str(&c.format());
            out.push('\n');
        }
        self.more_cgroups(&mut out);
        out
    }
}

/// `(N more WHAT: FLAG 0 shows all)` when `shown` rows of `total` leave
/// some out.
fn more_line(out: &mut String, total: u64, shown: usize, what: &str, flag: &str) {
    let more = total.saturating_sub(shown as u64);
    if more > 0 {
        let _ = writeln!(out, "({more} more {what}: {flag} 0 shows all)");
    }
}

/// Seconds with three decimals, e.g. `1.234s`.
pub fn fmt_secs(ns: u64) -> String {
    format!("{:.3}s", ns as f64 / 1e9)
}

pub const TABLE_HEADER: &str = "     PID COMM             NICE WEIGHT CLASS   CPU%     RUNTIME  PERIODS THROTTLED  THR_TIME  MAX_WAIT";

impl TaskStats {
    /// One table line.
    pub fn format(&self) -> String {
        format!(
            "{:>8} {:<16} {:>4} {:>6} {:<5} {:>6.1} {:>11} {:>8} {:>9} {:>9} {:>9}",
            self.pid,
            self.comm.chars().take(16).collect::<String>(),
            self.nice,
            self.weight,
            self.class,
            self.cpu_pct,
            fmt_secs(self.runtime_ns),
            self.nr_periods,
            self.nr_throttled,
            fmt_secs(self.throttled_ns),
            fmt_secs(self.max_wait_ns),
        )
    }
}

impl CgroupStats {
    /// One `cgroup PATH key=value ...` line.
    pub fn format(&self) -> String {
        format!(
            "cgroup {} from={} quota={}/{} burst={} cpu={:.1}% usage_usec={} nr_periods={} \
             nr_throttled={} throttled_usec={} nr_bursts={} burst_usec={}",
            self.path,
            self.source,
            self.quota_us,
            self.period_us,
            self.burst_us,
            self.cpu_pct,
            self.usage_usec,
            self.nr_periods,
            self.nr_throttled,
            self.throttled_usec,
            self.nr_bursts,
            self.burst_usec
        )
    }
}

/// The stats socket's data: each client gets, per request, the metrics
/// since its previous request (the first: since attach). The scheduler
/// answers a `()` request with a [`Snapshot`]. Request arguments `top` and
/// `top_cgroups`: the number of task and cgroup rows (default
/// `default_top`, 0 = all).
pub fn server_data(default_top: Top) -> StatsServerData<(), Snapshot> {
    let open: Box<dyn StatsOpener<(), Snapshot>> = Box::new(move |_| {
        let mut prev = Snapshot::default();
        let read: Box<dyn StatsReader<(), Snapshot>> = Box::new(move |args, (req, res)| {
            req.send(())?;
            let cur = res.recv()?;
            let arg = |name: &str, default: usize| match args.get(name) {
                Some(v) => v
                    .parse()
                    .map_err(|_| anyhow::anyhow!("{name}={v:?} is not a number of rows")),
                None => Ok(default),
            };
            let top = Top {
                tasks: arg("top", default_top.tasks)?,
                cgroups: arg("top_cgroups", default_top.cgroups)?,
            };
            let m = Metrics::between(&prev, &cur, top);
            prev = cur;
            m.to_json()
        });
        Ok(read)
    });
    StatsServerData::new()
        .add_meta(Metrics::meta())
        .add_meta(TaskStats::meta())
        .add_meta(CgroupStats::meta())
        .add_ops("top", StatsOps { open, close: None })
}

/// Where `--monitor` and other scx_stats clients find the running
/// scheduler (scx_stats' default path).
pub const SOCKET_PATH: &str = "/var/run/scx/root/stats";

/// The stats server on [`SOCKET_PATH`]; the socket goes away with it.
pub struct Server(Option<StatsServer<(), Snapshot>>);

impl Server {
    /// Serve [`server_data`] on [`SOCKET_PATH`], replacing a stale socket
    /// left by an instance that was killed. Only root may connect (mode
    /// 0600): the stats name every task on the host.
    pub fn launch(default_top: Top) -> Result<Server> {
        let server = StatsServer::new(server_data(default_top))
            .set_path(SOCKET_PATH)
            .launch()?;
        std::fs::set_permissions(SOCKET_PATH, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting {SOCKET_PATH} to root"))?;
        Ok(Server(Some(server)))
    }

    /// The scheduler's side: snapshots out, requests in.
    pub fn channels(&self) -> Option<(Sender<Snapshot>, Receiver<()>)> {
        self.0.as_ref().map(|s| s.channels())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Stop the listener first (it wakes itself through the socket).
        drop(self.0.take());
        let _ = std::fs::remove_file(SOCKET_PATH);
    }
}

/// `--monitor`: print the running scheduler's metrics every `interval`
/// (as a table, or a JSON object per line; `top` rows of each kind) until
/// `shutdown`.
pub fn monitor(interval: Duration, json: bool, top: Top, shutdown: &AtomicBool) -> Result<()> {
    // Fail at once if nothing runs; once connected, a restarting
    // scheduler is waited for (scx_utils retries).
    if !std::path::Path::new(SOCKET_PATH).exists() {
        bail!(
            "no running scx_fairquota to monitor: {SOCKET_PATH} does not exist; start the scheduler first"
        );
    }
    let args = [
        ("top".to_string(), top.tasks.to_string()),
        ("top_cgroups".to_string(), top.cgroups.to_string()),
    ];
    scx_utils::monitor_stats::<Metrics>(
        &args,
        interval,
        || shutdown.load(Ordering::Relaxed),
        |m| {
            print_metrics(&m, json);
            Ok(())
        },
    )
    .map_err(|e| match e.downcast_ref::<std::io::Error>() {
        Some(io) if io.kind() == std::io::ErrorKind::PermissionDenied => anyhow!(
            "cannot connect to {SOCKET_PATH}: permission denied; only root may read \
             scx_fairquota's statistics: run it with sudo"
        ),
        _ => e.context(format!("reading statistics from {SOCKET_PATH}")),
    })
}

/// Print `m` in one write (a pipe or the journal gets it whole).
pub fn print_metrics(m: &Metrics, json: bool) {
    let out = if json {
        serde_json::to_string(m).unwrap_or_default() + "\n"
    } else {
        m.format()
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroups::Limit;

    fn sample(pid: i32, runtime_ns: u64) -> TaskSample {
        TaskSample {
            pid,
            tgid: pid as u32,
            comm: "a-very-long-command-name".into(),
            nice: 0,
            weight: 100,
            fifo: false,
            runtime_ns,
            nr_periods: 3,
            nr_throttled: 2,
            throttled_ns: 1_500_000_000,
            max_wait_ns: 120_000_000,
        }
    }

    fn cgroup(usage_ns: u64) -> CgroupSample {
        CgroupSample {
            id: 9,
            limited: Limited {
                path: "a".into(),
                limit: Limit::new(2000, 10000, 1000),
                from_kernel: false,
            },
            usage: Usage {
                usage_ns,
                nr_periods: 12,
                nr_throttled: 7,
                throttled_ns: 80_000_000,
                nr_bursts: 2,
                burst_ns: 3_000_000,
            },
        }
    }

    #[test]
    fn totals_sum_and_delta() {
        let mut a = bpf_intf::counters {
            cnt: [0; NR_COUNTERS],
        };
        let mut b = bpf_intf::counters {
            cnt: [0; NR_COUNTERS],
        };
        a.cnt[0] = 5;
        b.cnt[0] = 7;
        b.cnt[2] = 1;
        let t = Totals::sum([&a, &b]);
        assert_eq!(t.get(0), 12);
        assert_eq!(t.get(2), 1);
        let mut later = t;
        later.0[0] = 20;
        assert_eq!(later.delta(&t).get(0), 8);
        assert_eq!(later.delta(&t).get(2), 0);
        // A counter that went backwards (map reset) does not panic.
        assert_eq!(t.delta(&later).get(0), 12u64.wrapping_sub(20));
    }

    #[test]
    fn counters_follow_the_bpf_index() {
        let mut t = Totals::default();
        t.0[bpf_intf::counter_idx_CNT_THROTTLE as usize] = 4;
        t.0[bpf_intf::counter_idx_CNT_CG_FULL as usize] = 1;
        let cur = Snapshot {
            totals: t,
            ..Default::default()
        };
        let m = Metrics::between(&Snapshot::default(), &cur, Top::ALL);
        assert_eq!((m.throttles, m.cg_full, m.guard), (4, 1, 0));
        let line = m.format_final();
        assert!(
            line.starts_with("[fairquota] final: fifo_dispatch=0 rr_dispatch=0 throttles=4"),
            "{line}"
        );
    }

    fn snapshots() -> (Snapshot, Snapshot) {
        let prev = Snapshot {
            at_ns: 1_000_000_000,
            tasks: vec![sample(1, 1_000_000_000), sample(2, 0)],
            cgroups: vec![cgroup(1_800_000_000)],
            ..Default::default()
        };
        // pid 1 used 0.2 s, pid 2 used 0.5 s, pid 3 is new with 0.1 s.
        let cur = Snapshot {
            at_ns: 2_000_000_000,
            tasks: vec![
                sample(1, 1_200_000_000),
                sample(2, 500_000_000),
                sample(3, 100_000_000),
            ],
            cgroups: vec![cgroup(2_000_000_000)],
            ..Default::default()
        };
        (prev, cur)
    }

    #[test]
    fn tasks_ranked_by_interval_cpu() {
        let (prev, cur) = snapshots();
        let top = Top {
            tasks: 2,
            cgroups: 0,
        };
        let m = Metrics::between(&prev, &cur, top);
        assert_eq!((m.nr_tasks, m.tasks.len()), (3, 2));
        assert_eq!(m.tasks[0].pid, 2);
        assert!((m.tasks[0].cpu_pct - 50.0).abs() < 1e-9);
        assert_eq!(m.tasks[1].pid, 1);
        assert!((m.tasks[1].cpu_pct - 20.0).abs() < 1e-9);
        assert_eq!(Metrics::between(&prev, &cur, Top::ALL).tasks.len(), 3);
        assert!((m.interval_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn cgroup_row_in_cpu_stat_vocabulary() {
        let (prev, cur) = snapshots();
        let m = Metrics::between(&prev, &cur, Top::ALL);
        assert_eq!(
            m.cgroups[0].format(),
            "cgroup a from=cli quota=2000/10000 burst=1000 cpu=20.0% usage_usec=2000000 \
             nr_periods=12 nr_throttled=7 throttled_usec=80000 nr_bursts=2 burst_usec=3000"
        );
        // The JSON carries the same struct, and reads back.
        let json = serde_json::to_string(&m).unwrap();
        let back: Metrics = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        assert!(json.contains("\"throttled_usec\":80000"), "{json}");
    }

    #[test]
    fn task_stats_parse() {
        // SAFETY: task_stat is plain integers; all zeroes is valid.
        let mut a: bpf_intf::task_stat = unsafe { std::mem::zeroed() };
        a.pid = 7;
        a.tgid = 5;
        for (d, s) in a.comm.iter_mut().zip(b"hog\0junk") {
            *d = *s as _;
        }
        a.runtime_ns = 9;
        a.class = bpf_intf::task_class_CLASS_FIFO;
        let mut buf = crate::config::as_bytes(&a).to_vec();
        buf.extend_from_slice(crate::config::as_bytes(&a));
        buf.extend_from_slice(&[1, 2, 3]); // a torn tail is ignored
        let t = parse_task_stats(&buf);
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].pid, t[0].tgid, t[0].comm.as_str()), (7, 5, "hog"));
        assert!(t[0].fifo);
        assert_eq!(t[1].runtime_ns, 9);
    }

    #[test]
    fn row_format() {
        let (prev, cur) = snapshots();
        let m = Metrics::between(&prev, &cur, Top::ALL);
        let t = m.tasks.iter().find(|t| t.pid == 1).unwrap();
        let line = t.format();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            cols,
            [
                "1",
                "a-very-long-comm",
                "0",
                "100",
                "RR",
                "20.0",
                "1.200s",
                "3",
                "2",
                "1.500s",
                "0.120s"
            ]
        );
        assert_eq!(
            TABLE_HEADER.split_whitespace().count(),
            cols.len(),
            "header and row columns line up"
        );
        let table = m.format();
        assert!(
            table.starts_with("[fairquota] t=2.0s tasks=3 cgroups=1 fifo_dispatch=0"),
            "{table}"
        );
        assert_eq!(table.lines().count(), 1 + 1 + 3 + 1);
    }

    #[test]
    fn busiest_cgroups_first_and_the_rest_counted() {
        // 5 groups; "c3" used the most in the interval, "c0" and "c4" tie
        // at none (c4 was throttled longer, so it comes first).
        let group = |i: u64, usage_ns: u64, throttled_ns: u64| {
            let mut c = cgroup(usage_ns);
            c.id = i;
            c.limited.path = format!("c{i}");
            c.usage.throttled_ns = throttled_ns;
            c
        };
        let prev = Snapshot {
            at_ns: 1_000_000_000,
            cgroups: (0..5).map(|i| group(i, 0, 0)).collect(),
            ..Default::default()
        };
        let cur = Snapshot {
            at_ns: 2_000_000_000,
            cgroups: vec![
                group(0, 0, 0),
                group(1, 100_000_000, 0),
                group(2, 200_000_000, 0),
                group(3, 300_000_000, 0),
                group(4, 0, 5_000_000),
            ],
            ..Default::default()
        };
        let top = Top {
            tasks: 0,
            cgroups: 2,
        };
        let m = Metrics::between(&prev, &cur, top);
        let paths: Vec<&str> = m.cgroups.iter().map(|c| c.path.as_str()).collect();
        assert_eq!((m.nr_cgroups, paths), (5, vec!["c3", "c2"]));
        let more = "(3 more limited cgroups: --top-cgroups 0 shows all)";
        assert_eq!(m.format().lines().last(), Some(more));
        assert_eq!(m.format_final().lines().last(), Some(more));
        let all = Metrics::between(&prev, &cur, Top::ALL);
        let paths: Vec<&str> = all.cgroups.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["c3", "c2", "c1", "c4", "c0"]);
        assert!(!all.format().contains("more limited cgroups"));
    }

    #[test]
    fn tasks_left_out_are_counted() {
        let (prev, cur) = snapshots();
        let top = Top {
            tasks: 1,
            cgroups: 0,
        };
        let table = Metrics::between(&prev, &cur, top).format();
        assert!(
            table.contains("\n(2 more tasks: --top 0 shows all)\n"),
            "{table}"
        );
    }

    #[test]
    fn every_field_is_described() {
        let mut out = Vec::new();
        server_data(Top::ALL).describe_meta(&mut out, None).unwrap();
        let text = String::from_utf8(out).unwrap();
        for field in ["cg_throttles", "max_wait_ns", "throttled_usec", "nr_bursts"] {
            assert!(
                text.contains(field),
                "{field} missing from --help-stats:\n{text}"
            );
        }
    }
}
