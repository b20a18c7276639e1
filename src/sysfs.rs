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
    fn root_check() {
        assert_eq!(check_root(0), Ok(()));
        assert!(check_root(1000).unwrap_err().contains("sudo"));
    }
}
