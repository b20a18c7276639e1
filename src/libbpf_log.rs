// SPDX-License-Identifier: GPL-2.0
//! libbpf's messages: kept in memory so that a failed load can show the
//! useful part of the verifier log, printed live only with --verbose.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use libbpf_rs::PrintLevel;

const KEEP_LINES: usize = 4000;

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static VERBOSE: AtomicBool = AtomicBool::new(false);

fn print_cb(_level: PrintLevel, msg: String) {
    if VERBOSE.load(Ordering::Relaxed) {
        eprint!("libbpf: {msg}");
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

/// The useful part of the last verifier log captured, if any.
pub fn last_verifier_excerpt() -> Option<String> {
    let lines = LINES.lock().ok()?;
    verifier_excerpt(&lines, 12)
}

/// From libbpf output, the program that failed to load and the last `max`
/// lines of its verifier log (where the verifier says what it rejected).
pub fn verifier_excerpt(lines: &[String], max: usize) -> Option<String> {
    let begin = lines
        .iter()
        .rposition(|l| l.contains("-- BEGIN PROG LOAD LOG --"))?;
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
    fn no_log_no_excerpt() {
        assert_eq!(verifier_excerpt(&["libbpf: hello".to_string()], 5), None);
    }
}
