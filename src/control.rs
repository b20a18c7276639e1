// SPDX-License-Identifier: GPL-2.0
//! Live reconfiguration. The daemon pins its BPF `config` map in bpffs;
//! `scx_fairquota set` opens the pinned map, applies the given changes to
//! the current values, checks the result and writes it. The BPF side reads
//! the map at every decision, so nothing is reloaded.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use log::warn;

use crate::bpf_intf;
use crate::config::{self, Tunables, Update};
use crate::sysfs;

pub const PIN_DIR: &str = "/sys/fs/bpf/scx_fairquota";
pub const PIN_CONFIG: &str = "/sys/fs/bpf/scx_fairquota/config";
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

/// Pin the daemon's config map where `set` finds it, replacing a stale pin
/// left by an instance that did not exit cleanly.
pub fn pin_config(map: &libbpf_rs::MapMut) -> Result<()> {
    ensure_bpffs()?;
    fs::create_dir_all(PIN_DIR).with_context(|| format!("creating {PIN_DIR}"))?;
    if Path::new(PIN_CONFIG).exists() {
        warn!("removing a stale {PIN_CONFIG} left by an earlier instance");
        fs::remove_file(PIN_CONFIG).with_context(|| format!("removing stale {PIN_CONFIG}"))?;
    }
    MapHandle::try_from(map)
        .and_then(|mut h| h.pin(PIN_CONFIG))
        .with_context(|| format!("pinning the config map at {PIN_CONFIG}"))
}

/// Remove the pin (the map itself lives as long as the scheduler).
pub fn unpin_config() {
    let _ = fs::remove_file(PIN_CONFIG);
    let _ = fs::remove_dir(PIN_DIR);
}

/// Read the current tunables and the daemon's tgid from a config map.
pub fn read_config<M: MapCore>(map: &M) -> Result<(Tunables, u32)> {
    let bytes = map
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)?
        .ok_or_else(|| anyhow!("the config map has no entry"))?;
    let c: bpf_intf::fq_config =
        config::from_bytes(&bytes).ok_or_else(|| anyhow!("the config map entry is too short"))?;
    Ok(Tunables::from_bpf(&c))
}

/// Open the running instance's config map.
fn open_running() -> Result<MapHandle> {
    // SAFETY: geteuid() has no preconditions.
    sysfs::check_root(unsafe { libc::geteuid() }).map_err(|m| anyhow!(m))?;
    let map = MapHandle::from_pinned_path(PIN_CONFIG).map_err(|_| {
        anyhow!("no running scx_fairquota found ({PIN_CONFIG} does not exist): start the scheduler first")
    })?;
    let (_, tgid) = read_config(&map)?;
    let attached = sysfs::attached_scheduler(Path::new(sysfs::SCHED_EXT_DIR));
    let alive = Path::new(&format!("/proc/{tgid}")).exists();
    if !alive
        || !attached
            .as_deref()
            .is_some_and(|n| n.starts_with("fairquota"))
    {
        bail!(
            "{PIN_CONFIG} is stale: scx_fairquota (pid {tgid}) is not running; \
             remove the file and start the scheduler"
        );
    }
    Ok(map)
}

/// `scx_fairquota set`: apply `u` to the running instance.
pub fn set(u: &Update) -> Result<()> {
    let map = open_running()?;
    let (cur, tgid) = read_config(&map)?;
    let new = cur.apply(u);
    new.validate()
        .map_err(|m| anyhow::Error::new(InvalidUpdate(m)))?;
    let c = new.to_bpf(tgid);
    map.update(&0u32.to_ne_bytes(), config::as_bytes(&c), MapFlags::ANY)
        .context("writing the config map")?;
    println!("scx_fairquota: updated: {new}");
    Ok(())
}

/// `scx_fairquota show`: print the running instance's tunables.
pub fn show() -> Result<()> {
    let map = open_running()?;
    let (cur, tgid) = read_config(&map)?;
    println!("scx_fairquota (pid {tgid}): {cur}");
    Ok(())
}
