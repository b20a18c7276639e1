// SPDX-License-Identifier: GPL-2.0
// Copyright (c) 2026 The scx_fairquota authors
//! The trace as Perfetto TrackEvent protobuf (the format Perfetto
//! recommends; ui.perfetto.dev opens the file). Only the messages and
//! fields used are declared, with the field numbers of Perfetto's protos
//! (protos/perfetto/trace/trace_packet.proto and track_event/*.proto);
//! prost encodes them.
//!
//! Layout: one track per task (a thread track, grouped by process) with a
//! slice for each turn on a CPU ("RR" or "FIFO") and for each throttled
//! span ("throttled"), and an instant event when the guard made it urgent;
//! one track per CPU with a slice per turn named after the task.

use prost::Message;

use super::timeline::{Span, Timeline};

#[derive(Clone, PartialEq, Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    #[prost(enumeration = "EventType", optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
}

/// TrackEvent.Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum EventType {
    Unspecified = 0,
    SliceBegin = 1,
    SliceEnd = 2,
    Instant = 3,
}

/// TracePacket.sequence_flags: SEQ_INCREMENTAL_STATE_CLEARED.
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// The one packet sequence this writer uses.
const SEQUENCE_ID: u32 = 1;

// Track uuids: a kind in the top bits, the id below.
fn process_uuid(tgid: u32) -> u64 {
    1 << 40 | tgid as u64
}
fn thread_uuid(pid: i32) -> u64 {
    2 << 40 | pid as u32 as u64
}
fn cpu_uuid(cpu: u32) -> u64 {
    3 << 40 | cpu as u64
}

fn descriptor(d: TrackDescriptor) -> TracePacket {
    TracePacket {
        trusted_packet_sequence_id: Some(SEQUENCE_ID),
        track_descriptor: Some(d),
        ..Default::default()
    }
}

/// (timestamp, order at equal timestamps, event): ends sort before begins.
type Timed = (u64, u8, TrackEvent);

/// A span of no length is left out: its end would sort before its begin
/// (ends first at equal timestamps), and it would show nothing anyway.
fn slice(out: &mut Vec<Timed>, track: u64, span: &Span, name: &str, category: &str) {
    if span.end_ns <= span.start_ns {
        return;
    }
    out.push((
        span.start_ns,
        1,
        TrackEvent {
            r#type: Some(EventType::SliceBegin as i32),
            track_uuid: Some(track),
            categories: vec![category.to_string()],
            name: Some(name.to_string()),
        },
    ));
    out.push((
        span.end_ns,
        0,
        TrackEvent {
            r#type: Some(EventType::SliceEnd as i32),
            track_uuid: Some(track),
            ..Default::default()
        },
    ));
}

/// Encode @tl; timestamps are CLOCK_MONOTONIC nanoseconds.
pub fn encode(tl: &Timeline) -> Vec<u8> {
    let mut packets = Vec::new();
    let mut processes: Vec<u32> = tl.tasks.iter().map(|t| t.tgid).collect();
    processes.sort_unstable();
    processes.dedup();
    for tgid in processes {
        let leader = tl.tasks.iter().find(|t| t.pid as u32 == tgid);
        packets.push(descriptor(TrackDescriptor {
            uuid: Some(process_uuid(tgid)),
            process: Some(ProcessDescriptor {
                pid: Some(tgid as i32),
                process_name: leader.map(|t| t.comm.clone()),
            }),
            ..Default::default()
        }));
    }
    for cpu in 0..tl.nr_cpus() {
        packets.push(descriptor(TrackDescriptor {
            uuid: Some(cpu_uuid(cpu)),
            name: Some(format!("CPU {cpu}")),
            ..Default::default()
        }));
    }

    let mut events: Vec<Timed> = Vec::new();
    for t in &tl.tasks {
        packets.push(descriptor(TrackDescriptor {
            uuid: Some(thread_uuid(t.pid)),
            thread: Some(ThreadDescriptor {
                pid: Some(t.tgid as i32),
                tid: Some(t.pid),
                thread_name: Some(t.comm.clone()),
            }),
            ..Default::default()
        }));
        for s in &t.runs {
            let class = if s.fifo { "FIFO" } else { "RR" };
            slice(&mut events, thread_uuid(t.pid), s, class, class);
            slice(&mut events, cpu_uuid(s.cpu), s, &t.label(), class);
        }
        for s in &t.throttled {
            slice(&mut events, thread_uuid(t.pid), s, "throttled", "throttle");
        }
        for &at in &t.guards {
            events.push((
                at,
                2,
                TrackEvent {
                    r#type: Some(EventType::Instant as i32),
                    track_uuid: Some(thread_uuid(t.pid)),
                    categories: vec!["guard".into()],
                    name: Some("guard: made urgent".into()),
                },
            ));
        }
    }
    events.sort_by_key(|(ts, order, _)| (*ts, *order));
    packets.extend(events.into_iter().map(|(ts, _, ev)| TracePacket {
        timestamp: Some(tl.origin_ns + ts),
        trusted_packet_sequence_id: Some(SEQUENCE_ID),
        track_event: Some(ev),
        ..Default::default()
    }));
    if let Some(first) = packets.first_mut() {
        first.sequence_flags = Some(SEQ_INCREMENTAL_STATE_CLEARED);
    }
    Trace { packet: packets }.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::super::timeline::{Kind, Timeline, tests::ev};
    use super::*;

    #[test]
    fn slices_balance_per_track_in_time_order() {
        let o = 1_000;
        let evs = [
            ev(o + 10, 1, Kind::Run, 0, false),
            ev(o + 30, 1, Kind::Stop, 0, false),
            ev(o + 30, 2, Kind::Run, 0, true),
            ev(o + 40, 1, Kind::Throttle, 0, false),
            ev(o + 60, 1, Kind::Release, 0, false),
            ev(o + 61, 2, Kind::Guard, 0, true),
        ];
        let tl = Timeline::build(&evs, o, 100, 0);
        let trace = Trace::decode(encode(&tl).as_slice()).unwrap();
        let descs: Vec<&TrackDescriptor> = trace
            .packet
            .iter()
            .filter_map(|p| p.track_descriptor.as_ref())
            .collect();
        // 2 processes, 1 CPU, 2 threads.
        assert_eq!(descs.len(), 5);
        assert!(descs.iter().any(|d| d.name.as_deref() == Some("CPU 0")));
        assert!(descs.iter().any(|d| {
            d.thread
                .as_ref()
                .is_some_and(|t| t.tid == Some(2) && t.thread_name.as_deref() == Some("task2"))
        }));
        assert_eq!(trace.packet[0].sequence_flags, Some(1));

        let evs: Vec<(u64, &TrackEvent)> = trace
            .packet
            .iter()
            .filter_map(|p| Some((p.timestamp?, p.track_event.as_ref()?)))
            .collect();
        assert!(evs.windows(2).all(|w| w[0].0 <= w[1].0));
        // Every track's slices open and close in order, never below zero.
        let mut depth = std::collections::HashMap::new();
        for (_, e) in &evs {
            let d = depth.entry(e.track_uuid.unwrap()).or_insert(0i32);
            match e.r#type {
                Some(1) => *d += 1,
                Some(2) => *d -= 1,
                _ => {}
            }
            assert!(*d >= 0 && *d <= 1, "overlapping slices on one track");
        }
        assert!(depth.values().all(|&d| d == 0));
        let names: Vec<&str> = evs.iter().filter_map(|(_, e)| e.name.as_deref()).collect();
        assert_eq!(
            names,
            [
                "RR",
                "task1 1",
                "FIFO",
                "task2 2",
                "throttled",
                "guard: made urgent"
            ]
        );
        // Task 2's turn starts at 30, when task 1's ends: the end comes first.
        assert_eq!(evs[2].0, o + 30);
        assert_eq!(evs[2].1.r#type, Some(2));
    }

    #[test]
    fn spans_of_no_length_are_left_out() {
        // A turn and a throttled stretch that start and end at the same
        // nanosecond (a CI trace had one: its end came before its begin).
        let o = 1_000;
        let evs = [
            ev(o + 10, 1, Kind::Run, 0, false),
            ev(o + 10, 1, Kind::Stop, 0, false),
            ev(o + 20, 1, Kind::Throttle, 0, false),
            ev(o + 20, 1, Kind::Release, 0, false),
            ev(o + 20, 1, Kind::Run, 0, false),
            ev(o + 50, 1, Kind::Stop, 0, false),
        ];
        let tl = Timeline::build(&evs, o, 100, 0);
        let trace = Trace::decode(encode(&tl).as_slice()).unwrap();
        let kinds: Vec<(u64, i32)> = trace
            .packet
            .iter()
            .filter_map(|p| Some((p.timestamp?, p.track_event.as_ref()?.r#type?)))
            .collect();
        // One turn, 20..50, on the thread's track and the CPU's.
        assert_eq!(kinds, [(o + 20, 1), (o + 20, 1), (o + 50, 2), (o + 50, 2)]);
    }
}
