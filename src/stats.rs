// SPDX-License-Identifier: GPL-2.0
//! Statistics: per-task samples and global counters read from the BPF
//! maps, their deltas over an interval, and the printed table.

use std::collections::HashMap;
use std::fmt::Write;

use crate::bpf_intf;

/// The global counters, each defined once: index in the BPF `counters`
/// map, the name printed, and what it counts.
pub const COUNTERS: [(u32, &str, &str); bpf_intf::counter_idx_NR_COUNTERS as usize] = [
    (
        bpf_intf::counter_idx_CNT_FIFO_DISPATCH,
        "fifo_dispatch",
        "FIFO tasks started",
    ),
    (
        bpf_intf::counter_idx_CNT_RR_DISPATCH,
        "rr_dispatch",
        "RR tasks started",
    ),
    (
        bpf_intf::counter_idx_CNT_THROTTLE,
        "throttles",
        "tasks that ran out of quota",
    ),
    (
        bpf_intf::counter_idx_CNT_GUARD,
        "guard",
        "RR tasks that waited past the guard (made urgent)",
    ),
    (
        bpf_intf::counter_idx_CNT_FIFO_ROTATE,
        "fifo_rotate",
        "FIFO tasks that waited past 1 s (made urgent)",
    ),
    (
        bpf_intf::counter_idx_CNT_WAKE_PREEMPT,
        "wake_preempt",
        "queued tasks that preempted a running one",
    ),
    (
        bpf_intf::counter_idx_CNT_SLICE_TIMER,
        "slice_timer",
        "slices ended between ticks by the slice timer",
    ),
    (
        bpf_intf::counter_idx_CNT_ENQ_LAST,
        "enq_last",
        "last tasks of a CPU re-queued with a follow-up kick",
    ),
    (
        bpf_intf::counter_idx_CNT_LLC_PULL,
        "llc_pull",
        "RR tasks moved to a less loaded LLC",
    ),
    (
        bpf_intf::counter_idx_CNT_CG_THROTTLE,
        "cg_throttles",
        "times a limited cgroup ran out of quota",
    ),
    (
        bpf_intf::counter_idx_CNT_CG_FULL,
        "cg_full",
        "cpu.max limits not enforced: more limited cgroups than the maps hold",
    ),
];

/// Global counters, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals(pub [u64; COUNTERS.len()]);

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

    /// `name=total (+delta)` for each counter.
    pub fn format(&self, delta: Option<&Totals>) -> String {
        let mut s = String::new();
        for (idx, name, _) in COUNTERS {
            let _ = write!(s, " {name}={}", self.get(idx));
            if let Some(d) = delta {
                let _ = write!(s, " (+{})", d.get(idx));
            }
        }
        s.trim_start().to_string()
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
        let comm: Vec<u8> = c
            .comm
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| b as u8)
            .collect();
        TaskSample {
            pid: c.pid,
            tgid: c.tgid,
            comm: String::from_utf8_lossy(&comm).into_owned(),
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

/// A task's row in the table: its sample and its CPU use in the interval.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRow {
    pub sample: TaskSample,
    pub cpu_pct: f64,
}

/// Decode the iterator's output: a sequence of `struct task_stat`.
pub fn parse_task_stats(buf: &[u8]) -> Vec<TaskSample> {
    buf.chunks_exact(std::mem::size_of::<bpf_intf::task_stat>())
        .filter_map(crate::config::from_bytes::<bpf_intf::task_stat>)
        .map(|s| TaskSample::from_stat(&s))
        .collect()
}

/// Rank tasks by CPU used since `prev` (the previous samples by pid) over
/// `interval_ns` and keep the `top` busiest. A task not seen before counts
/// all its runtime as used in the interval.
pub fn top_tasks(
    now: &[TaskSample],
    prev: &HashMap<i32, TaskSample>,
    interval_ns: u64,
    top: usize,
) -> Vec<TaskRow> {
    let mut rows: Vec<TaskRow> = now
        .iter()
        .map(|s| {
            let before = prev.get(&s.pid).map_or(0, |p| p.runtime_ns);
            let used = s.runtime_ns.saturating_sub(before);
            TaskRow {
                sample: s.clone(),
                cpu_pct: used as f64 * 100.0 / interval_ns.max(1) as f64,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.cpu_pct
            .total_cmp(&a.cpu_pct)
            .then(a.sample.pid.cmp(&b.sample.pid))
    });
    rows.truncate(top);
    rows
}

/// Seconds with three decimals, e.g. `1.234s`.
pub fn fmt_secs(ns: u64) -> String {
    format!("{:.3}s", ns as f64 / 1e9)
}

pub const TABLE_HEADER: &str = "     PID COMM             NICE WEIGHT CLASS   CPU%     RUNTIME  PERIODS THROTTLED  THR_TIME  MAX_WAIT";

/// One table line.
pub fn format_row(row: &TaskRow) -> String {
    let s = &row.sample;
    format!(
        "{:>8} {:<16} {:>4} {:>6} {:<5} {:>6.1} {:>11} {:>8} {:>9} {:>9} {:>9}",
        s.pid,
        s.comm.chars().take(16).collect::<String>(),
        s.nice,
        s.weight,
        if s.fifo { "FIFO" } else { "RR" },
        row.cpu_pct,
        fmt_secs(s.runtime_ns),
        s.nr_periods,
        s.nr_throttled,
        fmt_secs(s.throttled_ns),
        fmt_secs(s.max_wait_ns),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn counters_are_indexed_in_order() {
        for (i, (idx, _, _)) in COUNTERS.iter().enumerate() {
            assert_eq!(*idx as usize, i);
        }
    }

    #[test]
    fn totals_sum_and_delta() {
        let mut a = bpf_intf::counters {
            cnt: [0; COUNTERS.len()],
        };
        let mut b = bpf_intf::counters {
            cnt: [0; COUNTERS.len()],
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
    fn totals_format() {
        let mut t = Totals::default();
        t.0[bpf_intf::counter_idx_CNT_THROTTLE as usize] = 4;
        let s = t.format(Some(&t));
        assert!(s.starts_with("fifo_dispatch=0 (+0) rr_dispatch=0"), "{s}");
        assert!(s.contains("throttles=4 (+4)"), "{s}");
        assert!(!t.format(None).contains('+'));
    }

    #[test]
    fn top_tasks_ranks_by_interval_cpu() {
        let prev: HashMap<i32, TaskSample> = [(1, sample(1, 1_000_000_000)), (2, sample(2, 0))]
            .into_iter()
            .collect();
        // pid 1 used 0.2 s, pid 2 used 0.5 s, pid 3 is new with 0.1 s.
        let now = vec![
            sample(1, 1_200_000_000),
            sample(2, 500_000_000),
            sample(3, 100_000_000),
        ];
        let rows = top_tasks(&now, &prev, 1_000_000_000, 2);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].sample.pid, 2);
        assert!((rows[0].cpu_pct - 50.0).abs() < 1e-9);
        assert_eq!(rows[1].sample.pid, 1);
        assert!((rows[1].cpu_pct - 20.0).abs() < 1e-9);
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
        let row = TaskRow {
            sample: sample(42, 2_500_000_000),
            cpu_pct: 20.04,
        };
        let line = format_row(&row);
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            cols,
            [
                "42",
                "a-very-long-comm",
                "0",
                "100",
                "RR",
                "20.0",
                "2.500s",
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
    }
}
