// SPDX-License-Identifier: GPL-2.0
//! Property tests (proptest) of everything that parses outside input: the
//! command line (run, `set`), cgroup limits, configuration updates, the
//! BPF records the daemon decodes and the statistics it serves. None may
//! panic; what is accepted must be valid and survive its encodings.

use clap::Parser;
use proptest::prelude::*;

use crate::cgroups::{self, CgroupArg};
use crate::config::{SliceMode, Tunables, Update};
use crate::stats::{CgroupSample, Metrics, Snapshot, TaskSample, Top, Totals};
use crate::trace::timeline::{Event, Kind, Timeline};
use crate::{Cmd, Opts, bpf_intf, config};

/// Words a command line is made of: every option, edge values, junk.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "--period-us",
            "--quota-us",
            "--slice-us",
            "--slice-mode",
            "--slice-min-us",
            "--fifo-below-nice",
            "--guard-ms",
            "--max-stall-us",
            "--cgroup",
            "--stats",
            "--stats-interval",
            "--top",
            "--json",
            "--monitor",
            "--help-stats",
            "set",
            "show",
            "trace",
            "--duration",
            "--out",
            "--png",
            "--rows",
            "--max-events",
            "0.01",
            "60",
            "60.5",
            "--no-quota",
            "fixed",
            "split",
            "0",
            "1",
            "-1",
            "999",
            "1000",
            "10000",
            "1000000",
            "1000001",
            "18446744073709551615",
            "18446744073709551616",
            "nan",
            "inf",
            "-0",
            "1e3",
            "a=1000/10000",
            "a=max",
            "=",
            "a=1/2/3/4",
            "/sys/fs/cgroup/x=2000/10000/1000",
        ])
        .prop_map(str::to_string),
        "\\PC{0,12}",
        any::<u64>().prop_map(|v| v.to_string()),
    ]
}

fn update() -> impl Strategy<Value = Update> {
    let opt = || prop::option::of(any::<u64>());
    (
        (opt(), opt(), any::<bool>(), opt(), opt()),
        (any::<bool>(), opt(), prop::option::of(any::<i32>()), opt()),
    )
        .prop_map(
            |((slice, min, split, period, quota), (noq, guard, nice, stall))| Update {
                slice_us: slice,
                slice_min_us: min,
                slice_mode: Some(if split {
                    SliceMode::Split
                } else {
                    SliceMode::Fixed
                }),
                period_us: period,
                quota_us: quota,
                no_quota: noq,
                guard_ms: guard,
                fifo_below_nice: nice,
                max_stall_us: stall,
            },
        )
}

fn task() -> impl Strategy<Value = TaskSample> {
    (
        any::<i32>(),
        any::<u32>(),
        "\\PC{0,20}",
        any::<[u64; 5]>(),
        any::<bool>(),
    )
        .prop_map(|(pid, tgid, comm, v, fifo)| TaskSample {
            pid,
            tgid,
            comm,
            nice: (pid % 40) - 20,
            weight: tgid % 10_000,
            fifo,
            runtime_ns: v[0],
            nr_periods: v[1],
            nr_throttled: v[2],
            throttled_ns: v[3],
            max_wait_ns: v[4],
        })
}

const NR_COUNTERS: usize = bpf_intf::counter_idx_NR_COUNTERS as usize;

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        any::<u64>(),
        // A vector, not `any::<[u64; N]>()`: proptest's arrays stop at 32.
        prop::collection::vec(any::<u64>(), NR_COUNTERS)
            .prop_map(|v| <[u64; NR_COUNTERS]>::try_from(v).unwrap()),
        prop::collection::vec(task(), 0..20),
        prop::collection::vec((0u64..4, any::<[u64; 6]>()), 0..4),
    )
        .prop_map(|(at_ns, cnt, tasks, cgs)| Snapshot {
            at_ns,
            totals: Totals(cnt),
            tasks,
            cgroups: cgs
                .into_iter()
                .map(|(id, u)| CgroupSample {
                    id,
                    limited: cgroups::Limited {
                        path: format!("g{id}"),
                        limit: cgroups::Limit::new(u[0] % 1_000_000 + 1000, 100_000, 0),
                        from_kernel: id % 2 == 0,
                    },
                    usage: cgroups::Usage {
                        usage_ns: u[0],
                        nr_periods: u[1],
                        nr_throttled: u[2],
                        throttled_ns: u[3],
                        nr_bursts: u[4],
                        burst_ns: u[5],
                    },
                })
                .collect(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any command line: a clean error or options whose tunables either
    /// validate (and survive the BPF encoding) or are refused.
    #[test]
    fn command_lines_never_panic(args in prop::collection::vec(word(), 0..8)) {
        let argv = std::iter::once("scx_fairquota".to_string()).chain(args);
        if let Ok(opts) = Opts::try_parse_from(argv) {
            match &opts.cmd {
                None => {
                    let t = opts.run.tunables();
                    if t.validate().is_ok() {
                        prop_assert_eq!(Tunables::from_bpf(&t.to_bpf()), t);
                    }
                }
                Some(Cmd::Set(s)) => {
                    let t = Tunables::default().apply(&s.update());
                    if t.validate().is_ok() {
                        prop_assert_eq!(Tunables::from_bpf(&t.to_bpf()), t);
                    }
                }
                Some(Cmd::Show) => {}
                Some(Cmd::Trace(t)) => {
                    let r = t.request();
                    prop_assert!(r.duration.as_secs_f64() >= 0.01
                                 && r.duration.as_secs_f64() <= crate::trace::MAX_DURATION_S);
                    prop_assert!(r.rows >= 1 && r.max_events >= 1);
                }
            }
        }
    }

    /// Any `set` update on any valid configuration.
    #[test]
    fn updates_never_panic(u in update()) {
        let t = Tunables::default().apply(&u);
        if t.validate().is_ok() {
            prop_assert_eq!(Tunables::from_bpf(&t.to_bpf()), t);
        }
    }

    /// Any `--cgroup` text: parsed limits are within cpu.max's own limits.
    #[test]
    fn cgroup_args_never_panic(s in "\\PC{0,40}", q in any::<u64>(), p in any::<u64>(),
                               b in prop::option::of(any::<u64>())) {
        let _ = s.parse::<CgroupArg>();
        let text = match b {
            Some(b) => format!("g={q}/{p}/{b}"),
            None => format!("g={q}/{p}"),
        };
        if let Ok(a) = text.parse::<CgroupArg>() {
            let l = a.limit.expect("a limit, not max");
            prop_assert!(cgroups::check_limit(&l).is_ok());
            prop_assert_eq!((l.quota_us, l.period_us), (q, p));
        }
    }

    /// Any bytes from the task iterator or the cgroup state map.
    #[test]
    fn bpf_records_never_panic(buf in prop::collection::vec(any::<u8>(), 0..1024)) {
        let n = crate::stats::parse_task_stats(&buf).len();
        prop_assert_eq!(n, buf.len() / std::mem::size_of::<bpf_intf::task_stat>());
        let _ = cgroups::parse_state(&buf);
        let _ = config::from_bytes::<bpf_intf::fq_config>(&buf);
        let _ = Event::parse(&buf);
    }

    /// Any sequence of trace events (lost, duplicated, out of order, out
    /// of the window): spans stay inside the window and in order, and the
    /// Perfetto encoding works.
    #[test]
    fn trace_events_never_panic(evs in prop::collection::vec(
            (0u64..3000, 1i32..6, 0usize..5, 0u32..4, any::<bool>()), 0..200),
            origin in 0u64..1000, dur in 0u64..2000) {
        let kinds = [Kind::Run, Kind::Stop, Kind::Throttle, Kind::Release, Kind::Guard];
        let evs: Vec<Event> = evs.into_iter().map(|(ts, pid, k, cpu, fifo)| Event {
            ts_ns: ts, pid, tgid: 1, cpu, kind: kinds[k], fifo, arg: 0, comm: [b'x'; 16],
        }).collect();
        let tl = Timeline::build(&evs, origin, dur, 0);
        for t in &tl.tasks {
            for s in t.runs.iter().chain(&t.throttled) {
                prop_assert!(s.start_ns <= s.end_ns && s.end_ns <= dur);
            }
            prop_assert!(t.guards.iter().all(|&g| g <= dur));
        }
        let _ = crate::trace::encode_perfetto(&tl);
    }

    /// Any two snapshots (counters that went backwards, pids reused, time
    /// standing still): metrics, their table and their JSON.
    #[test]
    fn metrics_never_panic(prev in snapshot(), cur in snapshot(), tasks in 0usize..30, cgroups in 0usize..5) {
        let top = Top { tasks, cgroups };
        let m = Metrics::between(&prev, &cur, top);
        let _ = m.format();
        let _ = m.format_final();
        let json = serde_json::to_string(&m).unwrap();
        let back: Metrics = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back.tasks.len(), m.tasks.len());
        prop_assert!(tasks == 0 || m.tasks.len() <= tasks);
        prop_assert!(cgroups == 0 || m.cgroups.len() <= cgroups);
        prop_assert_eq!(m.nr_cgroups as usize, cur.cgroups.len());
    }
}
