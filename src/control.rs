// SPDX-License-Identifier: GPL-2.0
//! Live reconfiguration. The daemon pins its BPF config maps in bpffs;
//! `scx_fairquota set` opens the pinned maps, and under a lock file applies
//! the given changes to the current values, checks the result and
//! publishes it as a new snapshot. The BPF side reads the current
//! snapshot in place at every decision, so nothing is reloaded.

use std::fs;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use log::warn;

use crate::bpf_intf;
use crate::cgroups::{self, CgroupArg};
use crate::config::{self, Tunables, Update};
use crate::sysfs;

pub const PIN_DIR: &str = "/sys/fs/bpf/scx_fairquota";
pub const PIN_SLOTS: &str = "/sys/fs/bpf/scx_fairquota/config_slots";
pub const PIN_SEQ: &str = "/sys/fs/bpf/scx_fairquota/config_seq";
pub const PIN_CG_LIMITS: &str = "/sys/fs/bpf/scx_fairquota/cgroup_limits";
pub const PIN_CG_STATES: &str = "/sys/fs/bpf/scx_fairquota/cgroup_states";
pub const PIN_TRACE_EVENTS: &str = "/sys/fs/bpf/scx_fairquota/trace_events";
pub const PIN_TRACE_CTL: &str = "/sys/fs/bpf/scx_fairquota/trace_ctl";
const PINS: [&str; 6] = [
    PIN_SLOTS,
    PIN_SEQ,
    PIN_CG_LIMITS,
    PIN_CG_STATES,
    PIN_TRACE_EVENTS,
    PIN_TRACE_CTL,
];
const LOCK_DIR: &str = "/run/scx_fairquota";
const LOCK_FILE: &str = "/run/scx_fairquota/config.lock";
const TRACE_LOCK_FILE: &str = "/run/scx_fairquota/trace.lock";
const BPF_FS_MAGIC: i64 = 0xcafe4a11;

/// A `set` request whose result would be invalid (exit status 2).
#[derive(Debug)]
pub struct InvalidUpdate(pub String);

impl std::fmt::Display for InvalidUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidUpdate {}

/// Mount bpffs on /sys/fs/bpf unless it is there already.
fn ensure_bpffs() -> Result<()> {
    let dir = c"/sys/fs/bpf";
    // SAFETY: statfs() fills a zeroed struct; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(dir.as_ptr(), &mut st) } == 0 && st.f_type as i64 == BPF_FS_MAGIC {
        return Ok(());
    }
    // SAFETY: all strings are NUL-terminated literals.
    let ret = unsafe {
        libc::mount(
            c"bpf".as_ptr(),
            dir.as_ptr(),
            c"bpf".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if ret != 0 {
        bail!(
            "cannot mount bpffs on /sys/fs/bpf ({}): mount it with `mount -t bpf bpf /sys/fs/bpf`",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// The two maps that hold the live configuration (see `struct fq_config`
/// in bpf/intf.h): two slots and the sequence number that says which slot
/// is current.
pub struct ConfigMaps<'m, S: MapCore, Q: MapCore> {
    pub slots: &'m S,
    pub seq: &'m Q,
}

impl<S: MapCore, Q: MapCore> ConfigMaps<'_, S, Q> {
    fn seq(&self) -> Result<u64> {
        let b = self
            .seq
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)?
            .ok_or_else(|| anyhow!("the config_seq map has no entry"))?;
        config::from_bytes(&b).ok_or_else(|| anyhow!("the config_seq entry is too short"))
    }

    /// The current tunables.
    pub fn read(&self) -> Result<Tunables> {
        let slot = (self.seq()? & 1) as u32;
        let bytes = self
            .slots
            .lookup(&slot.to_ne_bytes(), MapFlags::ANY)?
            .ok_or_else(|| anyhow!("the config_slots map has no entry {slot}"))?;
        let c: bpf_intf::fq_config = config::from_bytes(&bytes)
            .ok_or_else(|| anyhow!("the config_slots entry is too short"))?;
        Ok(Tunables::from_bpf(&c))
    }

    /// Publish `t`: wait until no BPF callback can still be reading the
    /// slot that is not current (it was, before the last bump:
    /// `wait_for_readers`), fill it, then bump the sequence number. BPF
    /// readers read the current slot in place and see either the old or
    /// the new values, never a mix. Waiting first, not after the bump,
    /// keeps that true when the last writer was killed right after its
    /// bump. Callers hold the config lock (one writer at a time).
    pub fn write(&self, t: &Tunables) -> Result<()> {
        wait_for_readers();
        let next = self.seq()?.wrapping_add(1);
        let slot = (next & 1) as u32;
        self.slots
            .update(
                &slot.to_ne_bytes(),
                config::as_bytes(&t.to_bpf()),
                MapFlags::ANY,
            )
            .context("writing the config_slots map")?;
        self.seq
            .update(&0u32.to_ne_bytes(), &next.to_ne_bytes(), MapFlags::ANY)
            .context("writing the config_seq map")
    }
}

/// Wait for an RCU grace period: every BPF callback and timer that reads
/// the configuration is non-sleepable, so it runs inside an RCU read-side
/// section, and one that started before the sequence number last moved
/// has returned once a grace period has passed. `membarrier(MEMBARRIER_CMD_GLOBAL)`
/// is the system call that waits for one (`synchronize_rcu()`). A kernel
/// with nohz_full CPUs refuses it; there, a pause of 50 ms, thousands of
/// times the length of a callback.
fn wait_for_readers() {
    const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;
    // SAFETY: membarrier takes no pointers.
    let ret = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) };
    if ret != 0 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// An exclusive lock file (flock, released when dropped): the
/// configuration's, held while reading, merging and writing it so that two
/// `set` calls at once both take effect; the tracer's, so that one trace
/// runs at a time.
pub struct Lock {
    _file: fs::File,
}

impl Lock {
    /// Wait for the configuration lock (`set` calls take turns).
    pub fn config() -> Result<Lock> {
        Self::flock(LOCK_FILE, libc::LOCK_EX)?.ok_or_else(|| anyhow!("cannot lock {LOCK_FILE}"))
    }

    /// The tracer's lock, without waiting: None if another tracer has it.
    pub fn try_trace() -> Result<Option<Lock>> {
        Self::flock(TRACE_LOCK_FILE, libc::LOCK_EX | libc::LOCK_NB)
    }

    fn flock(path: &str, op: libc::c_int) -> Result<Option<Lock>> {
        fs::create_dir_all(LOCK_DIR).with_context(|| format!("creating {LOCK_DIR}"))?;
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("opening {path}"))?;
        // SAFETY: flock() on a file descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), op) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Ok(None);
            }
            bail!("cannot lock {path}: {err}");
        }
        Ok(Some(Lock { _file: f }))
    }
}

/// Pin the daemon's maps that `set` changes where it finds them,
/// replacing stale pins left by an instance that did not exit cleanly.
pub fn pin_maps(maps: &[(&libbpf_rs::MapMut, &str)]) -> Result<()> {
    ensure_bpffs()?;
    fs::create_dir_all(PIN_DIR).with_context(|| format!("creating {PIN_DIR}"))?;
    for (map, path) in maps {
        if Path::new(path).exists() {
            warn!("removing a stale {path} left by an earlier instance");
            fs::remove_file(path).with_context(|| format!("removing stale {path}"))?;
        }
        MapHandle::try_from(*map)
            .and_then(|mut h| h.pin(path))
            .with_context(|| format!("pinning a map at {path}"))?;
    }
    Ok(())
}

/// Remove the pins (the maps themselves live as long as the scheduler).
pub fn unpin_maps() {
    for p in PINS {
        let _ = fs::remove_file(p);
    }
    let _ = fs::remove_dir(PIN_DIR);
}

/// Open the running instance's config maps (slots, seq).
fn open_running() -> Result<(MapHandle, MapHandle)> {
    let [slots, seq] = open_running_maps([PIN_SLOTS, PIN_SEQ])?;
    Ok((slots, seq))
}

/// Open maps the running instance pinned at @paths.
pub fn open_running_maps<const N: usize>(paths: [&str; N]) -> Result<[MapHandle; N]> {
    // SAFETY: geteuid() has no preconditions.
    sysfs::check_root(unsafe { libc::geteuid() }).map_err(|m| anyhow!(m))?;
    let open = |path: &str| {
        MapHandle::from_pinned_path(path).map_err(|_| {
            anyhow!(
                "no running scx_fairquota found ({path} does not exist): start the scheduler first"
            )
        })
    };
    let maps = paths
        .iter()
        .map(|p| open(p))
        .collect::<Result<Vec<_>>>()?
        .try_into()
        .map_err(|_| anyhow!("internal error: wrong number of maps"))?;
    let attached = sysfs::attached_scheduler(Path::new(sysfs::SCHED_EXT_DIR));
    if !attached
        .as_deref()
        .is_some_and(|n| n.starts_with("fairquota"))
    {
        bail!(
            "{PIN_DIR} is stale: scx_fairquota is not attached; \
             remove the directory and start the scheduler"
        );
    }
    Ok(maps)
}

/// `scx_fairquota set`: apply `u` and the cgroup limits `cgs` to the
/// running instance.
pub fn set(u: &Update, cgs: &[CgroupArg]) -> Result<()> {
    let (slots, seq) = open_running()?;
    let maps = ConfigMaps {
        slots: &slots,
        seq: &seq,
    };
    let _lock = Lock::config()?;
    let mut new = maps.read()?.apply(u);
    new.validate()
        .map_err(|m| anyhow::Error::new(InvalidUpdate(m)))?;
    if !cgs.is_empty() {
        let open = |p: &str| MapHandle::from_pinned_path(p).with_context(|| format!("opening {p}"));
        let limits = open(PIN_CG_LIMITS)?;
        for a in cgs {
            let id = cgroups::cgroup_id(&cgroups::cgroup_dir(&a.path))?;
            match a.limit {
                Some(limit) => {
                    let l = cgroups::Limited {
                        path: a.path.clone(),
                        limit,
                        from_kernel: false,
                    };
                    cgroups::write_limit(&limits, id, &l)?;
                    println!("scx_fairquota: cgroup limit: {l}");
                }
                None => {
                    cgroups::unlimit(&limits, id);
                    println!("scx_fairquota: cgroup {}: no limit", a.path);
                }
            }
        }
        new.nr_cgroups = cgroups::read_limits(&limits).len() as u32;
        new.cgroup_gen += 1;
    }
    maps.write(&new)?;
    println!("scx_fairquota: updated: {new}");
    Ok(())
}

/// `scx_fairquota show`: print the running instance's tunables.
pub fn show() -> Result<()> {
    let (slots, seq) = open_running()?;
    let maps = ConfigMaps {
        slots: &slots,
        seq: &seq,
    };
    println!("scx_fairquota: {}", maps.read()?);
    Ok(())
}
