//! The loader's CPU priority.
//!
//! The kernel's BPF verifier runs in the context of the thread that loads the
//! program, before our scheduler is attached, so under the default scheduler
//! it competes with every runnable task on its CPU. On a saturated host, a
//! restart (systemd's Restart=on-failure) would then take as many times
//! longer as there are runnable tasks: in the 2-vCPU test VM with four CPU
//! hogs, the load took 116 s at nice 0 against 15-23 s at nice -20.
//!
//! So the loading thread raises its priority to nice -20 for the load and
//! drops back to the nice it was started with right after, before any other
//! thread is spawned (on Linux the nice value is per thread; the threads
//! spawned later inherit the restored value). Raising needs CAP_SYS_NICE or
//! an RLIMIT_NICE that allows it (the shipped unit sets LimitNICE=-20);
//! without either, the load runs at the nice it was given. Lowering the
//! priority again needs nothing.

/// The nice value the BPF program is loaded at.
const LOAD_NICE: i32 = -20;

/// The calling thread's nice value.
fn current() -> std::io::Result<i32> {
    // getpriority() returns -1 both as a value and as an error: errno tells.
    unsafe { *libc::__errno_location() = 0 };
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(0) | None => Ok(nice),
        Some(_) => Err(err),
    }
}

fn set(nice: i32) -> std::io::Result<()> {
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The calling thread at LOAD_NICE until this is dropped, if it may be.
pub struct Raised {
    /// The nice value before, restored on drop if `now` differs.
    before: i32,
    /// The nice value the thread runs at while this lives.
    now: i32,
    /// Why it could not be raised.
    refused: Option<std::io::Error>,
}

impl Raised {
    pub fn new() -> std::io::Result<Self> {
        let before = current()?;
        let (now, refused) = if before <= LOAD_NICE {
            (before, None)
        } else {
            match set(LOAD_NICE) {
                Ok(()) => (LOAD_NICE, None),
                Err(e) => (before, Some(e)),
            }
        };
        Ok(Self {
            before,
            now,
            refused,
        })
    }

    /// For the log: the nice of the load, and how to raise it if it was not.
    pub fn describe(&self) -> String {
        match &self.refused {
            None => format!("at nice {}", self.now),
            Some(e) => format!(
                "at nice {} (nice {LOAD_NICE} refused: {e}; give the daemon CAP_SYS_NICE or \
                 LimitNICE={LOAD_NICE} so that a start on a busy host is not slowed down)",
                self.now
            ),
        }
    }
}

impl Drop for Raised {
    fn drop(&mut self) {
        if self.now != self.before
            && let Err(e) = set(self.before)
        {
            log::warn!(
                "could not return to nice {} after loading: {e}",
                self.before
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raised_for_the_load_then_restored() {
        let before = current().unwrap();
        {
            let r = Raised::new().unwrap();
            assert_eq!(current().unwrap(), r.now);
            // Root (as in CI) may raise it; anyone else keeps theirs.
            if r.refused.is_none() {
                assert_eq!(r.now, before.min(LOAD_NICE));
                assert_eq!(r.describe(), format!("at nice {}", before.min(LOAD_NICE)));
            } else {
                assert_eq!(r.now, before);
                assert!(r.describe().contains("LimitNICE=-20"), "{}", r.describe());
            }
        }
        assert_eq!(current().unwrap(), before);
    }

    #[test]
    fn a_refusal_names_the_fix() {
        let r = Raised {
            before: 0,
            now: 0,
            refused: Some(std::io::Error::from_raw_os_error(libc::EACCES)),
        };
        let d = r.describe();
        assert!(
            d.starts_with("at nice 0 (nice -20 refused: Permission denied"),
            "{d}"
        );
        assert!(d.contains("CAP_SYS_NICE or LimitNICE=-20"), "{d}");
    }
}
