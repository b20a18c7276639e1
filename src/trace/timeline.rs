// SPDX-License-Identifier: GPL-2.0
// Copyright (c) 2026 The scx_fairquota authors
//! The timeline a trace is drawn from: the ring buffer's events decoded
//! and paired into spans (a task running on a CPU, a task throttled) per
//! task. Pure logic, unit-tested; the Perfetto and PNG writers read it.

use std::collections::HashMap;

use crate::bpf_intf;

/// What happened (enum trace_kind in bpf/intf.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Run,
    Stop,
    Throttle,
    Release,
    Guard,
}

/// One event as the BPF side wrote it (struct fq_trace_event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub ts_ns: u64,
    pub pid: i32,
    pub tgid: u32,
    pub cpu: u32,
    pub kind: Kind,
    pub fifo: bool,
    pub arg: u8,
    pub comm: [u8; 16],
}

impl Event {
    /// Decode one ring buffer record; None if it is not a valid event.
    pub fn parse(b: &[u8]) -> Option<Event> {
        let e = crate::config::from_bytes::<bpf_intf::fq_trace_event>(b)?;
        let kind = match e.kind as u32 {
            bpf_intf::trace_kind_TRACE_RUN => Kind::Run,
            bpf_intf::trace_kind_TRACE_STOP => Kind::Stop,
            bpf_intf::trace_kind_TRACE_THROTTLE => Kind::Throttle,
            bpf_intf::trace_kind_TRACE_RELEASE => Kind::Release,
            bpf_intf::trace_kind_TRACE_GUARD => Kind::Guard,
            _ => return None,
        };
        Some(Event {
            ts_ns: e.ts_ns,
            pid: e.pid,
            tgid: e.tgid,
            cpu: e.cpu,
            kind,
            fifo: e.class as u32 == bpf_intf::task_class_CLASS_FIFO,
            arg: e.arg,
            comm: e.comm.map(|c| c as u8),
        })
    }

    pub fn comm(&self) -> String {
        crate::stats::comm_string(&self.comm)
    }
}

/// A stretch of time, in nanoseconds since the start of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
    /// The CPU it ran on (running spans) or was queued on (throttled).
    pub cpu: u32,
    /// The task's class during the span (running spans).
    pub fifo: bool,
}

/// Everything one task did during the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Task {
    pub pid: i32,
    pub tgid: u32,
    pub comm: String,
    pub runs: Vec<Span>,
    pub throttled: Vec<Span>,
    /// When the guard moved it to the urgent queue.
    pub guards: Vec<u64>,
}

impl Task {
    pub fn runtime_ns(&self) -> u64 {
        self.runs.iter().map(|s| s.end_ns - s.start_ns).sum()
    }

    pub fn throttled_ns(&self) -> u64 {
        self.throttled.iter().map(|s| s.end_ns - s.start_ns).sum()
    }

    pub fn label(&self) -> String {
        format!("{} {}", self.comm, self.pid)
    }
}

/// A whole trace: its tasks, busiest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// CLOCK_MONOTONIC time of the start, in nanoseconds.
    pub origin_ns: u64,
    /// Length of the trace in nanoseconds.
    pub duration_ns: u64,
    pub tasks: Vec<Task>,
    pub nr_events: usize,
    /// Events the BPF side could not record (ring buffer full).
    pub dropped: u64,
}

#[derive(Default)]
struct Open {
    run: Option<(u64, u32, bool)>,
    throttle: Option<(u64, u32)>,
    /// The time of the task's previous event: where a span whose start
    /// was lost (before the window, or dropped) begins at the earliest.
    last: u64,
}

impl Timeline {
    /// Pair the events of the window [origin_ns, origin_ns + duration_ns)
    /// into spans. A span already open when the window starts begins at
    /// 0 (or, if its start was lost, at the task's previous event); one
    /// still open when it ends ends at duration_ns.
    pub fn build(events: &[Event], origin_ns: u64, duration_ns: u64, dropped: u64) -> Timeline {
        let mut sorted: Vec<&Event> = events.iter().collect();
        sorted.sort_by_key(|e| e.ts_ns);
        let rel = |ts: u64| ts.saturating_sub(origin_ns).min(duration_ns);

        let mut tasks: HashMap<i32, (Task, Open)> = HashMap::new();
        for e in sorted {
            let t = rel(e.ts_ns);
            let (task, open) = tasks.entry(e.pid).or_insert_with(|| {
                let task = Task {
                    pid: e.pid,
                    tgid: e.tgid,
                    comm: e.comm(),
                    ..Default::default()
                };
                (task, Open::default())
            });
            let span = |start_ns, cpu, fifo| Span {
                start_ns,
                end_ns: t,
                cpu,
                fifo,
            };
            match e.kind {
                Kind::Run => {
                    // A lost stop: the previous run ended by now at the latest.
                    if let Some((s, cpu, fifo)) = open.run.take() {
                        task.runs.push(span(s, cpu, fifo));
                    }
                    open.run = Some((t, e.cpu, e.fifo));
                    task.comm = e.comm();
                }
                Kind::Stop => {
                    let (s, cpu, fifo) = open.run.take().unwrap_or((open.last, e.cpu, e.fifo));
                    task.runs.push(span(s, cpu, fifo));
                }
                Kind::Throttle => {
                    open.throttle.get_or_insert((t, e.cpu));
                }
                Kind::Release => {
                    let (s, cpu) = open.throttle.take().unwrap_or((open.last, e.cpu));
                    task.throttled.push(span(s, cpu, e.fifo));
                }
                Kind::Guard => task.guards.push(t),
            }
            open.last = t;
        }

        let mut out: Vec<Task> = tasks
            .into_values()
            .map(|(mut task, open)| {
                let end = duration_ns;
                if let Some((s, cpu, fifo)) = open.run {
                    task.runs.push(Span {
                        start_ns: s,
                        end_ns: end,
                        cpu,
                        fifo,
                    });
                }
                if let Some((s, cpu)) = open.throttle {
                    task.throttled.push(Span {
                        start_ns: s,
                        end_ns: end,
                        cpu,
                        fifo: false,
                    });
                }
                task
            })
            .collect();
        out.sort_by(|a, b| {
            b.runtime_ns()
                .cmp(&a.runtime_ns())
                .then(b.throttled_ns().cmp(&a.throttled_ns()))
                .then(a.pid.cmp(&b.pid))
        });
        Timeline {
            origin_ns,
            duration_ns,
            tasks: out,
            nr_events: events.len(),
            dropped,
        }
    }

    /// The number of CPUs seen in the trace (highest CPU id + 1).
    pub fn nr_cpus(&self) -> u32 {
        self.tasks
            .iter()
            .flat_map(|t| t.runs.iter().map(|s| s.cpu + 1))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub fn ev(ts_ns: u64, pid: i32, kind: Kind, cpu: u32, fifo: bool) -> Event {
        let mut comm = [0u8; 16];
        let name = format!("task{pid}");
        comm[..name.len()].copy_from_slice(name.as_bytes());
        Event {
            ts_ns,
            pid,
            tgid: pid as u32,
            cpu,
            kind,
            fifo,
            arg: 0,
            comm,
        }
    }

    #[test]
    fn parses_what_bpf_writes() {
        let mut raw: bpf_intf::fq_trace_event = unsafe { std::mem::zeroed() };
        raw.ts_ns = 42;
        raw.pid = 7;
        raw.tgid = 5;
        raw.cpu = 3;
        raw.kind = bpf_intf::trace_kind_TRACE_THROTTLE as u8;
        raw.class = bpf_intf::task_class_CLASS_FIFO as u8;
        raw.arg = 1;
        for (d, s) in raw.comm.iter_mut().zip(b"hog\0") {
            *d = *s as _;
        }
        let e = Event::parse(crate::config::as_bytes(&raw)).unwrap();
        assert_eq!((e.ts_ns, e.pid, e.tgid, e.cpu), (42, 7, 5, 3));
        assert_eq!((e.kind, e.fifo, e.arg), (Kind::Throttle, true, 1));
        assert_eq!(e.comm(), "hog");
        // Short records and unknown kinds are refused.
        let size = std::mem::size_of::<bpf_intf::fq_trace_event>();
        assert!(Event::parse(&crate::config::as_bytes(&raw)[..size - 1]).is_none());
        raw.kind = 99;
        assert!(Event::parse(crate::config::as_bytes(&raw)).is_none());
    }

    #[test]
    fn pairs_runs_and_throttles() {
        let o = 1_000_000;
        let evs = [
            ev(o + 10, 1, Kind::Run, 0, false),
            ev(o + 30, 1, Kind::Stop, 0, false),
            ev(o + 31, 1, Kind::Throttle, 0, false),
            ev(o + 20, 2, Kind::Run, 1, true), // out of order: sorted first
            ev(o + 60, 1, Kind::Release, 0, false),
            ev(o + 70, 1, Kind::Run, 1, false),
            ev(o + 75, 2, Kind::Guard, 1, true),
        ];
        let tl = Timeline::build(&evs, o, 100, 3);
        assert_eq!((tl.nr_events, tl.dropped, tl.nr_cpus()), (7, 3, 2));
        let t1 = tl.tasks.iter().find(|t| t.pid == 1).unwrap();
        assert_eq!(
            t1.runs
                .iter()
                .map(|s| (s.start_ns, s.end_ns, s.cpu))
                .collect::<Vec<_>>(),
            [(10, 30, 0), (70, 100, 1)]
        );
        assert_eq!(
            t1.throttled
                .iter()
                .map(|s| (s.start_ns, s.end_ns))
                .collect::<Vec<_>>(),
            [(31, 60)]
        );
        assert_eq!(
            (t1.runtime_ns(), t1.throttled_ns(), t1.label()),
            (50, 29, "task1 1".into())
        );
        // Task 2 runs from 20 to the end: the busiest comes first.
        assert_eq!(tl.tasks[0].pid, 2);
        assert_eq!(
            tl.tasks[0].runs[0],
            Span {
                start_ns: 20,
                end_ns: 100,
                cpu: 1,
                fifo: true
            }
        );
        assert_eq!(tl.tasks[0].guards, [75]);
    }

    #[test]
    fn spans_cut_by_the_window() {
        let o = 500;
        // Running since before the trace, stopped inside it; a lost stop;
        // events outside the window are clamped into it.
        let evs = [
            ev(o + 5, 1, Kind::Stop, 2, false),
            ev(o + 8, 1, Kind::Run, 2, false),
            ev(o + 9, 1, Kind::Run, 3, false),
            ev(o + 500, 1, Kind::Stop, 3, false),
            ev(o + 2, 4, Kind::Release, 0, false),
            ev(100, 5, Kind::Run, 0, false),
            ev(o + 20, 1, Kind::Guard, 3, false),
        ];
        let tl = Timeline::build(&evs, o, 50, 0);
        let t1 = tl.tasks.iter().find(|t| t.pid == 1).unwrap();
        assert_eq!(
            t1.runs
                .iter()
                .map(|s| (s.start_ns, s.end_ns, s.cpu))
                .collect::<Vec<_>>(),
            [(0, 5, 2), (8, 9, 2), (9, 50, 3)]
        );
        let t4 = tl.tasks.iter().find(|t| t.pid == 4).unwrap();
        assert_eq!(t4.throttled[0].start_ns..t4.throttled[0].end_ns, 0..2);
        let t5 = tl.tasks.iter().find(|t| t.pid == 5).unwrap();
        assert_eq!(t5.runs[0].start_ns..t5.runs[0].end_ns, 0..50);
        assert!(Timeline::build(&[], o, 50, 0).tasks.is_empty());
    }
}
