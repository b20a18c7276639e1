// SPDX-License-Identifier: GPL-2.0
//! Checks made before anything is loaded: a kernel with sched_ext, root,
//! and no other sched_ext scheduler attached. Each failure is one message
//! that names the problem and the fix.

use std::fs;
use std::path::Path;

/// Where the kernel shows sched_ext state.
pub const SCHED_EXT_DIR: &str = "/sys/kernel/sched_ext";

/// Fail unless `dir` (normally [`SCHED_EXT_DIR`]) exists.
pub fn check_sched_ext(dir: &Path, kernel_release: &str) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(format!(
        "this kernel ({kernel_release}) has no sched_ext ({} is missing): it was built \
         without CONFIG_SCHED_CLASS_EXT=y. Boot a kernel with CONFIG_SCHED_CLASS_EXT=y \
         (and CONFIG_DEBUG_INFO_BTF=y), e.g. Debian's linux-image-cloud-amd64 7.x from sid",
        dir.display()
    ))
}

/// The name of the sched_ext scheduler attached now, if any.
pub fn attached_scheduler(dir: &Path) -> Option<String> {
    let state = fs::read_to_string(dir.join("state")).ok()?;
    if state.trim() == "disabled" {
        return None;
    }
    let ops = fs::read_to_string(dir.join("root/ops")).unwrap_or_default();
    let ops = ops.trim();
    Some(if ops.is_empty() {
        format!("unknown (state: {})", state.trim())
    } else {
        ops.to_string()
    })
}

/// Fail if another scheduler is attached, naming it.
pub fn check_no_other_scheduler(dir: &Path) -> Result<(), String> {
    match attached_scheduler(dir) {
        None => Ok(()),
        Some(name) => Err(format!(
            "another sched_ext scheduler is already attached: {name}. Stop it first \
             (e.g. `systemctl stop scx_fairquota` or the service that started it), \
             then run scx_fairquota again"
        )),
    }
}

/// Fail unless running as root.
pub fn check_root(euid: u32) -> Result<(), String> {
    if euid == 0 {
        Ok(())
    } else {
        Err("must run as root to load a BPF scheduler (uid is not 0): \
             run it with sudo"
            .to_string())
    }
}

/// Capability numbers (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The effective capabilities of this process (CapEff in
/// /proc/self/status), or all if they cannot be read.
pub fn effective_caps() -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(u64::MAX)
}

/// Loading the scheduler needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN
/// (which implies both; the VM test test_systemd_unit_way measures this).
pub fn check_caps(eff: u64) -> Result<(), String> {
    let has = |c: u32| eff & (1u64 << c) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON)) {
        return Ok(());
    }
    let missing: Vec<&str> = [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
        .into_iter()
        .filter(|(c, _)| !has(*c))
        .map(|(_, n)| n)
        .collect();
    Err(format!(
        "missing capability {}: loading the scheduler needs CAP_BPF and CAP_PERFMON \
         (or CAP_SYS_ADMIN); grant them (the systemd unit's CapabilityBoundingSet) or run as root \
         without a capability bounding set",
        missing.join(" and ")
    ))
}

/// The number of online CPUs (8 if the C library cannot tell).
pub fn online_cpus() -> u64 {
    // SAFETY: sysconf() only reads a system value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 { n as u64 } else { 8 }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("fq-sysfs-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn missing_sched_ext_names_the_option() {
        let e = check_sched_ext(Path::new("/nonexistent/sched_ext"), "6.18.1").unwrap_err();
        assert!(e.contains("CONFIG_SCHED_CLASS_EXT=y"), "{e}");
        assert!(e.contains("6.18.1"), "{e}");
        assert_eq!(check_sched_ext(&tmpdir("present"), "7.2"), Ok(()));
    }

    #[test]
    fn attached_scheduler_is_named() {
        let d = tmpdir("attached");
        fs::write(d.join("state"), "disabled\n").unwrap();
        assert_eq!(attached_scheduler(&d), None);
        assert_eq!(check_no_other_scheduler(&d), Ok(()));

        fs::write(d.join("state"), "enabled\n").unwrap();
        fs::create_dir_all(d.join("root")).unwrap();
        fs::write(d.join("root/ops"), "bpfland_1.1.4_x86_64\n").unwrap();
        let e = check_no_other_scheduler(&d).unwrap_err();
        assert!(e.contains("already attached: bpfland_1.1.4_x86_64"), "{e}");
    }

    #[test]
    fn capabilities_checked() {
        let bit = |c: u32| 1u64 << c;
        assert_eq!(check_caps(bit(CAP_SYS_ADMIN)), Ok(()));
        assert_eq!(check_caps(bit(CAP_BPF) | bit(CAP_PERFMON)), Ok(()));
        let e = check_caps(bit(CAP_BPF)).unwrap_err();
        assert!(e.starts_with("missing capability CAP_PERFMON:"), "{e}");
        let e = check_caps(0).unwrap_err();
        assert!(e.contains("CAP_BPF and CAP_PERFMON:"), "{e}");
    }

    #[test]
    fn root_check() {
        assert_eq!(check_root(0), Ok(()));
        assert!(check_root(1000).unwrap_err().contains("sudo"));
    }
}
