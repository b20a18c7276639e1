// SPDX-License-Identifier: GPL-2.0
//! Cgroup limits: `--cgroup PATH=QUOTA/PERIOD` parsing and checks, the
//! cgroup v2 directory behind a path, the `cgroup_limits` map entries, and
//! per-cgroup statistics in cpu.stat's vocabulary.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, Result, anyhow, bail};
use libbpf_rs::{MapCore, MapFlags};

use crate::bpf_intf;
use crate::config::{self, PERIOD_US_MAX, PERIOD_US_MIN, QUOTA_US_MIN};

/// Where cgroup v2 is mounted; relative `--cgroup` paths start here.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const CGROUP2_SUPER_MAGIC: i64 = 0x63677270;
/// Largest quota per period: as many CPUs as the scheduler handles.
pub const QUOTA_PERIODS_MAX: u64 = bpf_intf::consts_MAX_CPUS as u64;

/// A limit in microseconds, as in cpu.max and cpu.max.burst.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limit {
    pub quota_us: u64,
    pub period_us: u64,
    pub burst_us: u64,
}

impl Limit {
    pub fn new(quota_us: u64, period_us: u64, burst_us: u64) -> Self {
        Limit {
            quota_us,
            period_us,
            burst_us,
        }
    }
}

impl fmt::Display for Limit {
    /// `QUOTA/PERIOD`, `/BURST` only when there is one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.quota_us, self.period_us)?;
        if self.burst_us != 0 {
            write!(f, "/{}", self.burst_us)?;
        }
        Ok(())
    }
}

/// A limit as given on the command line: `PATH=QUOTA/PERIOD[/BURST]` (µs,
/// as in cpu.max and cpu.max.burst), or `PATH=max` to remove one (`set`
/// only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupArg {
    pub path: String,
    /// `None`: `max`, no limit.
    pub limit: Option<Limit>,
}

impl FromStr for CgroupArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "'{s}' is not PATH=QUOTA/PERIOD[/BURST] (microseconds, as in cpu.max and \
                 cpu.max.burst, e.g. system.slice/docker-1234.scope=20000/100000) or PATH=max"
            )
        };
        let (path, spec) = s.rsplit_once('=').ok_or_else(bad)?;
        if path.is_empty() {
            return Err(bad());
        }
        if spec == "max" {
            return Ok(CgroupArg {
                path: path.to_string(),
                limit: None,
            });
        }
        let nums: Vec<&str> = spec.split('/').collect();
        if !(2..=3).contains(&nums.len()) {
            return Err(bad());
        }
        let num = |t: &str| t.parse::<u64>().map_err(|_| bad());
        let l = Limit::new(
            num(nums[0])?,
            num(nums[1])?,
            nums.get(2).map_or(Ok(0), |t| num(t))?,
        );
        check_limit(&l).map_err(|m| format!("{s}: {m}"))?;
        Ok(CgroupArg {
            path: path.to_string(),
            limit: Some(l),
        })
    }
}

/// cpu.max's own limits: period 1 ms..1 s, quota at least 1 ms (and at most
/// one period per CPU the scheduler handles); cpu.max.burst's: at most the
/// quota.
pub fn check_limit(l: &Limit) -> Result<(), String> {
    let (quota_us, period_us) = (l.quota_us, l.period_us);
    if !(PERIOD_US_MIN..=PERIOD_US_MAX).contains(&period_us) {
        return Err(format!(
            "period {period_us} us is out of range: cpu.max accepts {PERIOD_US_MIN}..={PERIOD_US_MAX}"
        ));
    }
    if quota_us < QUOTA_US_MIN {
        return Err(format!(
            "quota {quota_us} us is too small: cpu.max's minimum is {QUOTA_US_MIN} us"
        ));
    }
    if quota_us / period_us > QUOTA_PERIODS_MAX {
        return Err(format!(
            "quota {quota_us} us is more than {QUOTA_PERIODS_MAX} CPUs' worth of period {period_us} us"
        ));
    }
    if l.burst_us > quota_us {
        return Err(format!(
            "burst {} us is larger than the quota {quota_us} us: cpu.max.burst accepts 0..=quota",
            l.burst_us
        ));
    }
    Ok(())
}

/// The directory of cgroup `path` (absolute under /sys/fs/cgroup, or
/// relative to it).
pub fn cgroup_dir(path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(CGROUP_ROOT).join(p)
    }
}

/// The id of the cgroup v2 directory `dir`: its inode number, which is the
/// kernel's cgroup id (kernfs node id).
pub fn cgroup_id(dir: &Path) -> Result<u64> {
    let md = std::fs::metadata(dir).map_err(|e| {
        anyhow!(
            "cgroup {}: {e}; give a cgroup v2 directory, absolute or relative to {CGROUP_ROOT}",
            dir.display()
        )
    })?;
    if !md.is_dir() {
        bail!("cgroup {}: not a directory", dir.display());
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .context("cgroup path contains a NUL byte")?;
    // SAFETY: statfs() fills a zeroed struct; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 || st.f_type as i64 != CGROUP2_SUPER_MAGIC
    {
        bail!(
            "{} is not in a cgroup v2 hierarchy: scx_fairquota limits cgroup v2 groups only",
            dir.display()
        );
    }
    Ok(md.ino())
}

/// The one message for a kernel that does not pass cgroups' cpu.max to
/// sched_ext schedulers (`ops.cgroup_set_bandwidth`, Linux 6.17+), or
/// `None` when it does.
pub fn kernel_cpu_max_note(supported: bool, release: &str) -> Option<String> {
    (!supported).then(|| {
        format!(
            "this kernel ({release}) does not pass cgroups' cpu.max to sched_ext schedulers \
             (ops.cgroup_set_bandwidth needs Linux 6.17+): cpu.max is not honored while \
             scx_fairquota runs; --cgroup limits still apply"
        )
    })
}

/// The warning for limits the BPF side could not take (its counter
/// `cg_full`: `refused` so far, `seen` at the last warning), or `None`
/// when there is nothing new to say. Each refusal is a cgroup that runs
/// unlimited: a finite cpu.max past the map's room, or a limited group
/// whose state found the state map full (counted again at each look).
/// The first refusal is told, then each doubling of the count: a few
/// lines, never one per second.
pub fn limits_full_warning(refused: u64, seen: u64) -> Option<String> {
    let max = bpf_intf::consts_MAX_LIMITED_CGROUPS;
    (refused > 0 && refused >= seen.saturating_mul(2)).then(|| {
        format!(
            "cgroup limits not enforced ({refused} refused so far): more limited cgroups than \
             this scheduler holds ({max} with a finite cpu.max, {max} from the command line); \
             the cgroups refused run unlimited. Set cpu.max to \"max\" where no limit is \
             needed, or limit a common parent instead"
        )
    })
}

/// A limited cgroup the daemon knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limited {
    pub path: String,
    pub limit: Limit,
    /// The limit is the kernel's cpu.max (no command-line limit on it).
    pub from_kernel: bool,
}

impl Limited {
    pub fn source(&self) -> &'static str {
        if self.from_kernel { "cpu.max" } else { "cli" }
    }
}

impl fmt::Display for Limited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={} ({:.1}% of a CPU, from {})",
            self.path,
            self.limit,
            self.limit.quota_us as f64 * 100.0 / self.limit.period_us as f64,
            self.source()
        )
    }
}

/// Resolve `--cgroup` arguments (limits only) into id -> limit.
pub fn resolve(args: &[CgroupArg]) -> Result<BTreeMap<u64, Limited>> {
    let mut out = BTreeMap::new();
    for a in args {
        let Some(limit) = a.limit else {
            bail!(
                "--cgroup {}=max: nothing to remove at start; give a limit",
                a.path
            );
        };
        let id = cgroup_id(&cgroup_dir(&a.path))?;
        out.insert(
            id,
            Limited {
                path: a.path.clone(),
                limit,
                from_kernel: false,
            },
        );
    }
    if out.len() > bpf_intf::consts_MAX_LIMITED_CGROUPS as usize {
        bail!(
            "{} limited cgroups: at most {} can be limited",
            out.len(),
            bpf_intf::consts_MAX_LIMITED_CGROUPS
        );
    }
    Ok(out)
}

fn limit_bytes(l: &Limited) -> Vec<u8> {
    let ns = bpf_intf::consts_NSEC_PER_USEC as u64;
    let v = bpf_intf::bw_limit {
        quota_ns: l.limit.quota_us * ns,
        period_ns: l.limit.period_us * ns,
        burst_ns: l.limit.burst_us * ns,
        pace_ns: 0,
        stat_period_ns: 0,
    };
    config::as_bytes(&v).to_vec()
}

/// Write limit `l` of cgroup `id` into the `cgroup_limits` map.
pub fn write_limit<M: MapCore>(limits: &M, id: u64, l: &Limited) -> Result<()> {
    limits
        .update(&id.to_ne_bytes(), &limit_bytes(l), MapFlags::ANY)
        .map_err(|e| {
            anyhow!(
                "cannot limit cgroup {} ({e}): at most {} cgroups can be limited",
                l.path,
                bpf_intf::consts_MAX_LIMITED_CGROUPS
            )
        })
}

/// Forget the limit of cgroup `id`, which still exists. Its state stays:
/// the group's release timer lives there and lets its parked tasks go
/// (the BPF side drops the state when the cgroup is removed).
pub fn unlimit<L: MapCore>(limits: &L, id: u64) {
    let _ = limits.delete(&id.to_ne_bytes());
}

/// Forget cgroup `id`, which was removed: its limit and its state.
pub fn remove<L: MapCore, S: MapCore>(limits: &L, states: &S, id: u64) {
    unlimit(limits, id);
    let _ = states.delete(&id.to_ne_bytes());
}

/// The limits in the map, by cgroup id.
pub fn read_limits<M: MapCore>(limits: &M) -> BTreeMap<u64, Limit> {
    let ns = bpf_intf::consts_NSEC_PER_USEC as u64;
    let mut out = BTreeMap::new();
    for key in limits.keys() {
        let Ok(k) = <[u8; 8]>::try_from(key.as_slice()) else {
            continue;
        };
        if let Ok(Some(v)) = limits.lookup(&key, MapFlags::ANY)
            && let Some(c) = config::from_bytes::<bpf_intf::bw_limit>(&v)
        {
            out.insert(
                u64::from_ne_bytes(k),
                Limit::new(c.quota_ns / ns, c.period_ns / ns, c.burst_ns / ns),
            );
        }
    }
    out
}

/// A cgroup's usage as read from `cgroup_states` (after its lock word).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub usage_ns: u64,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_ns: u64,
    pub nr_bursts: u64,
    pub burst_ns: u64,
}

/// Decode a `struct cg_state` value: a bpf_spin_lock word, padding, then
/// `struct cg_usage`.
pub fn parse_state(bytes: &[u8]) -> Option<Usage> {
    let u: bpf_intf::cg_usage = config::from_bytes(bytes.get(8..)?)?;
    Some(Usage {
        usage_ns: u.usage_ns,
        nr_periods: u.bw.nr_periods,
        nr_throttled: u.bw.nr_throttled,
        throttled_ns: u.bw.throttled_ns,
        nr_bursts: u.bw.nr_bursts,
        burst_ns: u.bw.burst_ns,
    })
}

pub fn read_usage<M: MapCore>(states: &M, id: u64) -> Usage {
    states
        .lookup(&id.to_ne_bytes(), MapFlags::ANY)
        .ok()
        .flatten()
        .and_then(|v| parse_state(&v))
        .unwrap_or_default()
}

/// Find the paths under /sys/fs/cgroup of the cgroups `ids` (limits from
/// cpu.max, or added by `set` in another process): one walk of the tree,
/// which ends once every id is found. Ids not found are left out.
pub fn find_paths(ids: &BTreeSet<u64>) -> BTreeMap<u64, String> {
    let mut found = BTreeMap::new();
    if ids.is_empty() {
        return found;
    }
    let mut stack = vec![PathBuf::from(CGROUP_ROOT)];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(md) = e.metadata() else { continue };
            if !md.is_dir() {
                continue;
            }
            if ids.contains(&md.ino())
                && let Ok(rel) = e.path().strip_prefix(CGROUP_ROOT)
            {
                found.insert(md.ino(), rel.display().to_string());
                if found.len() == ids.len() {
                    return found;
                }
            }
            stack.push(e.path());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_no_paths_for_no_ids() {
        assert!(find_paths(&BTreeSet::new()).is_empty());
        // An inode number no cgroup has: the walk ends with nothing.
        assert!(find_paths(&BTreeSet::from([u64::MAX])).is_empty());
    }

    #[test]
    fn warns_of_refused_limits_at_each_doubling() {
        assert_eq!(limits_full_warning(0, 0), None);
        assert!(limits_full_warning(1, 0).is_some());
        assert_eq!(limits_full_warning(3, 3), None);
        assert_eq!(limits_full_warning(5, 3), None);
        let w = limits_full_warning(6, 3).unwrap();
        assert!(
            w.starts_with("cgroup limits not enforced (6 refused so far)"),
            "{w}"
        );
        assert!(w.contains("4096 with a finite cpu.max"), "{w}");
    }

    #[test]
    fn parses_limits_and_max() {
        assert_eq!(
            "system.slice/docker-1.scope=20000/100000".parse(),
            Ok(CgroupArg {
                path: "system.slice/docker-1.scope".into(),
                limit: Some(Limit::new(20000, 100000, 0))
            })
        );
        assert_eq!(
            "/sys/fs/cgroup/a=max".parse(),
            Ok(CgroupArg {
                path: "/sys/fs/cgroup/a".into(),
                limit: None
            })
        );
        // A quota above the period is more than one CPU, as in cpu.max.
        assert!("a=150000/100000".parse::<CgroupArg>().is_ok());
        // An optional burst, as in cpu.max.burst.
        assert_eq!(
            "a=20000/100000/5000".parse::<CgroupArg>().unwrap().limit,
            Some(Limit::new(20000, 100000, 5000))
        );
        assert_eq!(
            Limit::new(20000, 100000, 5000).to_string(),
            "20000/100000/5000"
        );
        assert_eq!(Limit::new(20000, 100000, 0).to_string(), "20000/100000");
    }

    #[test]
    fn rejects_malformed_and_out_of_range() {
        for bad in [
            "a",
            "=1000/10000",
            "a=1000",
            "a=x/10000",
            "a=1000/y",
            "a=-1/10000",
            "a=1000/10000/",
            "a=1000/10000/1/2",
        ] {
            let e = bad.parse::<CgroupArg>().unwrap_err();
            assert!(e.contains("PATH=QUOTA/PERIOD"), "{bad}: {e}");
        }
        let e = "a=999/10000".parse::<CgroupArg>().unwrap_err();
        assert!(e.contains("too small"), "{e}");
        let e = "a=1000/999".parse::<CgroupArg>().unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        let e = "a=2000000/1000001".parse::<CgroupArg>().unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        let e = "a=1000/10000/1001".parse::<CgroupArg>().unwrap_err();
        assert!(e.contains("burst 1001 us is larger than the quota"), "{e}");
        assert!(check_limit(&Limit::new(1000, 1000, 1000)).is_ok());
        assert!(
            check_limit(&Limit::new(
                1_000_000 * (QUOTA_PERIODS_MAX + 1),
                1_000_000,
                0
            ))
            .is_err()
        );
    }

    #[test]
    fn older_kernels_get_one_note_about_cpu_max() {
        assert_eq!(kernel_cpu_max_note(true, "7.2.13"), None);
        let m = kernel_cpu_max_note(false, "6.12.9").unwrap();
        assert!(
            m.contains("6.12.9") && m.contains("cpu.max is not honored"),
            "{m}"
        );
        assert!(m.contains("--cgroup limits still apply"), "{m}");
    }

    #[test]
    fn relative_paths_start_at_the_cgroup_root() {
        assert_eq!(cgroup_dir("a/b"), PathBuf::from("/sys/fs/cgroup/a/b"));
        assert_eq!(
            cgroup_dir("/sys/fs/cgroup/x"),
            PathBuf::from("/sys/fs/cgroup/x")
        );
    }

    #[test]
    fn decodes_a_state() {
        let u = bpf_intf::cg_usage {
            bw: bpf_intf::bw_bucket {
                tokens_ns: 0,
                period_start_ns: 0,
                last_active_ns: 0,
                nr_periods: 12,
                nr_throttled: 7,
                throttled_ns: 80_000_000,
                parked_at_ns: 0,
                snap_ns: 0,
                nr_bursts: 2,
                burst_ns: 3_000_000,
                carry_ns: 0,
                hungry: 0,
                owed: 0,
                stat_end_ns: 0,
                stat_throttled: 0,
                debt_ns: 0,
            },
            usage_ns: 2_000_000_000,
            throttled_until_ns: 0,
        };
        let mut bytes = vec![0u8; 8];
        bytes.extend_from_slice(config::as_bytes(&u));
        let now = parse_state(&bytes).unwrap();
        assert_eq!(now.nr_throttled, 7);
        assert_eq!(
            (now.usage_ns, now.nr_bursts, now.burst_ns),
            (2_000_000_000, 2, 3_000_000)
        );
        assert!(parse_state(&bytes[..8]).is_none());
    }
}
