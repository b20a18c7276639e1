// SPDX-License-Identifier: GPL-2.0
//! libbpf's messages: kept in memory so that a failed load can show the
//! useful part of the verifier log, printed live only with --verbose.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use libbpf_rs::PrintLevel;

const KEEP_LINES: usize = 4000;

/// How libbpf opens the verifier log of a program it prints.
const LOG_BEGIN: &str = "-- BEGIN PROG LOAD LOG --";

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static STATS: Mutex<Vec<VerifierStats>> = Mutex::new(Vec::new());
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// What the verifier said it did to load one program (BPF_LOG_STATS).
#[derive(Debug, Clone, PartialEq)]
pub struct VerifierStats {
    pub prog: String,
    /// Instructions processed: the verifier's measure of its own work.
    pub insns: u64,
    pub usec: u64,
}

/// The stats in one message of libbpf's: the load log of a program, which
/// libbpf prints whole as "prog 'NAME': -- BEGIN PROG LOAD LOG --\n...".
pub fn parse_verifier_stats(msg: &str) -> Option<VerifierStats> {
    let (head, log) = msg.split_once(LOG_BEGIN)?;
    let prog = head.rsplit_once("prog '")?.1.split_once('\'')?.0;
    let number_after = |prefix: &str| -> Option<u64> {
        log.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    Some(VerifierStats {
        prog: prog.to_string(),
        insns: number_after("processed ")?,
        usec: number_after("verification time ")?,
    })
}

fn print_cb(_level: PrintLevel, msg: String) {
    if VERBOSE.load(Ordering::Relaxed) {
        eprint!("libbpf: {msg}");
    }
    if let Some(st) = parse_verifier_stats(&msg)
        && let Ok(mut stats) = STATS.lock()
    {
        stats.push(st);
    }
    if let Ok(mut lines) = LINES.lock() {
        lines.extend(msg.lines().map(str::to_string));
        let n = lines.len();
        if n > KEEP_LINES {
            lines.drain(..n - KEEP_LINES);
        }
    }
}

/// Route libbpf's output through this module.
pub fn init(verbose: bool) {
    VERBOSE.store(verbose, Ordering::Relaxed);
    libbpf_rs::set_print(Some((PrintLevel::Debug, print_cb)));
}

/// The verifier stats of the programs loaded since the last call.
pub fn take_verifier_stats() -> Vec<VerifierStats> {
    STATS
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default()
}

/// One line per program, most work first, then the total, as the daemon
/// logs them with --verifier-stats.
pub fn format_verifier_stats(stats: &[VerifierStats]) -> Vec<String> {
    let mut sorted: Vec<&VerifierStats> = stats.iter().collect();
    sorted.sort_by(|a, b| b.insns.cmp(&a.insns).then(a.prog.cmp(&b.prog)));
    let mut out: Vec<String> = sorted
        .iter()
        .map(|s| {
            format!(
                "verifier: {:<32} {:>8} instructions processed in {:.2}s",
                s.prog,
                s.insns,
                s.usec as f64 / 1e6
            )
        })
        .collect();
    out.push(format!(
        "verifier: {} programs, {} instructions processed in {:.1}s",
        stats.len(),
        stats.iter().map(|s| s.insns).sum::<u64>(),
        stats.iter().map(|s| s.usec).sum::<u64>() as f64 / 1e6
    ));
    out
}

/// The useful part of the last verifier log captured, if any.
pub fn last_verifier_excerpt() -> Option<String> {
    let lines = LINES.lock().ok()?;
    verifier_excerpt(&lines, 12)
}

/// From libbpf output, the program that failed to load and the last `max`
/// lines of its verifier log (where the verifier says what it rejected).
pub fn verifier_excerpt(lines: &[String], max: usize) -> Option<String> {
    let begin = lines.iter().rposition(|l| l.contains(LOG_BEGIN))?;
    let end = lines[begin..]
        .iter()
        .position(|l| l.contains("-- END PROG LOAD LOG --"))
        .map_or(lines.len(), |e| begin + e);
    let failed = lines[..begin]
        .iter()
        .rev()
        .find(|l| l.contains("failed to load") || l.contains("load failed"))
        .or_else(|| {
            lines[end.min(lines.len() - 1)..]
                .iter()
                .find(|l| l.contains("failed"))
        });
    let log = &lines[begin + 1..end];
    let tail = &log[log.len().saturating_sub(max)..];
    let mut out = String::new();
    if let Some(f) = failed {
        out.push_str(f.trim());
        out.push('\n');
    }
    if tail.len() < log.len() {
        out.push_str(&format!(
            "... ({} earlier verifier lines omitted)\n",
            log.len() - tail.len()
        ));
    }
    for l in tail {
        out.push_str(l);
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_takes_the_tail_of_the_last_log() {
        let mut v: Vec<String> = vec![
            "libbpf: prog 'fairquota_enqueue': BPF program load failed: Permission denied".into(),
            "libbpf: prog 'fairquota_enqueue': -- BEGIN PROG LOAD LOG --".into(),
        ];
        for i in 0..50 {
            v.push(format!("{i}: (85) call bpf_foo#1"));
        }
        v.push("R1 invalid mem access 'scalar'".into());
        v.push("-- END PROG LOAD LOG --".into());
        v.push("libbpf: failed to load object 'bpf_bpf'".into());
        let e = verifier_excerpt(&v, 5).unwrap();
        let lines: Vec<&str> = e.lines().collect();
        assert!(lines[0].contains("BPF program load failed"), "{e}");
        assert!(
            lines[1].contains("46 earlier verifier lines omitted"),
            "{e}"
        );
        assert_eq!(*lines.last().unwrap(), "R1 invalid mem access 'scalar'");
        assert_eq!(lines.len(), 7);
    }

    #[test]
    fn stats_from_a_load_log() {
        let msg = "prog 'fairquota_init': -- BEGIN PROG LOAD LOG --\n\
                   verification time 2301234 usec\n\
                   stack depth 48+152 max 200\n\
                   insns processed 306+3804+61\n\
                   processed 78105 insns (limit 1000000) max_states_per_insn 15\n\
                   -- END PROG LOAD LOG --\n";
        assert_eq!(
            parse_verifier_stats(msg),
            Some(VerifierStats {
                prog: "fairquota_init".into(),
                insns: 78105,
                usec: 2301234
            })
        );
        assert_eq!(
            parse_verifier_stats("libbpf: loaded 'fairquota_init'"),
            None
        );
        let no_stats = "prog 'x': -- BEGIN PROG LOAD LOG --\nR1 invalid mem access\n";
        assert_eq!(parse_verifier_stats(no_stats), None);
    }

    #[test]
    fn stats_lines_most_work_first_then_the_total() {
        let st = |prog: &str, insns, usec| VerifierStats {
            prog: prog.into(),
            insns,
            usec,
        };
        let lines = format_verifier_stats(&[st("a", 10, 1_000), st("b", 300, 2_500_000)]);
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("verifier: b "), "{lines:?}");
        assert!(
            lines[0].ends_with("300 instructions processed in 2.50s"),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("verifier: a "), "{lines:?}");
        assert_eq!(
            lines[2],
            "verifier: 2 programs, 310 instructions processed in 2.5s"
        );
    }

    #[test]
    fn no_log_no_excerpt() {
        assert_eq!(verifier_excerpt(&["libbpf: hello".to_string()], 5), None);
    }
}
