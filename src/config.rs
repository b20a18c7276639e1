// SPDX-License-Identifier: GPL-2.0
//! Tunables: range checks, cross-option checks and the encoding into the
//! BPF `config_slots` map entry (`struct fq_config`).

use std::fmt;

use crate::bpf_intf;

/// Accepted bandwidth period, as for cgroup v2 `cpu.max`.
pub const PERIOD_US_MIN: u64 = 1_000;
pub const PERIOD_US_MAX: u64 = 1_000_000;
/// Smallest quota per period (the kernel's own minimum for `cpu.max`).
pub const QUOTA_US_MIN: u64 = 1_000;
/// Accepted RR slices: below 100 us the scheduler would do little but
/// switch, above 1 s one task could hold a CPU for seconds.
pub const SLICE_US_MIN: u64 = 100;
pub const SLICE_US_MAX: u64 = 1_000_000;
pub const SLICE_MIN_US_MIN: u64 = 10;
/// The starvation guard must act well inside the kernel watchdog.
pub const GUARD_MS_MIN: u64 = 10;
pub const GUARD_MS_MAX: u64 = 1_000;

/// The slice of `Tunables::default()`: the default on 8 or more CPUs (the
/// daemon's default is `default_slice_us()` of the host).
pub const DEFAULT_SLICE_US: u64 = 3_000;
pub const DEFAULT_SLICE_MIN_US: u64 = 500;
pub const DEFAULT_PERIOD_US: u64 = 100_000;
pub const DEFAULT_GUARD_MS: u64 = 100;
pub const DEFAULT_FIFO_BELOW_NICE: i32 = 0;
/// Smooth mode: longest sub-period a limit is enforced over (0 = off).
pub const MAX_STALL_US_MIN: u64 = 1_000;
pub const MAX_STALL_US_MAX: u64 = 1_000_000;
/// On by default at 10 ms: a limit's period up to 10 ms is enforced whole
/// (as CFS does), a longer one in sub-periods of 10 ms. Measured by the
/// kernel's sched_switch events, 6 ms sub-periods (a 1.2 ms sub-quota at
/// 20%, below half a tick: a slice timer per turn) served nginx 71-75% of
/// the fair rate, 10 ms ones 100-103% with a shorter p99 (README, "Smooth
/// mode"; bench/bandwidth-selfclock-report.md).
pub const DEFAULT_MAX_STALL_US: u64 = 10_000;

/// The default RR slice on a host with `nr_cpus` online CPUs: the kernel's
/// own EEVDF base slice, 750 us x (1 + log2(min(CPUs, 8))) (its default
/// SCHED_TUNABLESCALING_LOG): 750 us on 1 CPU, 1500 us on 2 or 3, 2250 us
/// on 4 to 7, 3000 us from 8. RR turns then last what they would under the
/// default scheduler, so k tasks sharing a CPU wait as long between turns.
pub fn default_slice_us(nr_cpus: u64) -> u64 {
    750 * (1 + u64::from(nr_cpus.clamp(1, 8).ilog2()))
}

/// How an RR task's slice is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SliceMode {
    /// Every RR turn lasts `--slice-us`.
    Fixed,
    /// `--slice-us / (nr_waiting + 1)`, at least `--slice-min-us`.
    Split,
}

impl fmt::Display for SliceMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SliceMode::Fixed => "fixed",
            SliceMode::Split => "split",
        })
    }
}

/// Everything the BPF side reads from the `config` map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunables {
    pub slice_us: u64,
    pub slice_min_us: u64,
    pub slice_mode: SliceMode,
    pub period_us: u64,
    /// `None`: no bandwidth limit.
    pub quota_us: Option<u64>,
    pub guard_ms: u64,
    pub fifo_below_nice: i32,
    /// Smooth mode: limits are enforced over sub-periods of this
    /// long (0: off, over the configured period as CFS does).
    pub max_stall_us: u64,
    /// Generation of the limits, bumped on every change of the
    /// `cgroup_limits` map or of the per-task limit or its smoothing
    /// (`apply()`): the BPF side then looks again at every parked task, so a
    /// limit loosened lets them go at once. With the map's number of
    /// entries; not options, carried for the BPF side.
    pub cgroup_gen: u64,
    pub nr_cgroups: u32,
}

impl Default for Tunables {
    fn default() -> Self {
        Self {
            slice_us: DEFAULT_SLICE_US,
            slice_min_us: DEFAULT_SLICE_MIN_US,
            slice_mode: SliceMode::Fixed,
            period_us: DEFAULT_PERIOD_US,
            quota_us: None,
            guard_ms: DEFAULT_GUARD_MS,
            fifo_below_nice: DEFAULT_FIFO_BELOW_NICE,
            max_stall_us: DEFAULT_MAX_STALL_US,
            cgroup_gen: 0,
            nr_cgroups: 0,
        }
    }
}

/// Changes to apply to running tunables (the `set` subcommand).
#[derive(Clone, Debug, Default)]
pub struct Update {
    pub slice_us: Option<u64>,
    pub slice_min_us: Option<u64>,
    pub slice_mode: Option<SliceMode>,
    pub period_us: Option<u64>,
    pub quota_us: Option<u64>,
    pub no_quota: bool,
    pub guard_ms: Option<u64>,
    pub fifo_below_nice: Option<i32>,
    pub max_stall_us: Option<u64>,
}

impl Tunables {
    /// Check every range and every relation between options. The message
    /// names the option and the accepted values.
    pub fn validate(&self) -> Result<(), String> {
        check_range("--period-us", self.period_us, PERIOD_US_MIN, PERIOD_US_MAX)?;
        check_range("--slice-us", self.slice_us, SLICE_US_MIN, SLICE_US_MAX)?;
        check_range(
            "--slice-min-us",
            self.slice_min_us,
            SLICE_MIN_US_MIN,
            SLICE_US_MAX,
        )?;
        check_range("--guard-ms", self.guard_ms, GUARD_MS_MIN, GUARD_MS_MAX)?;
        if self.max_stall_us != 0 {
            check_range(
                "--max-stall-us",
                self.max_stall_us,
                MAX_STALL_US_MIN,
                MAX_STALL_US_MAX,
            )
            .map_err(|e| format!("{e} (or 0 for off)"))?;
        }
        if !(-20..=20).contains(&self.fifo_below_nice) {
            return Err(format!(
                "--fifo-below-nice {} is out of range: use -20..=20",
                self.fifo_below_nice
            ));
        }
        if self.slice_min_us > self.slice_us {
            return Err(format!(
                "--slice-min-us {} is larger than --slice-us {}: the minimum split slice \
                 cannot exceed the slice",
                self.slice_min_us, self.slice_us
            ));
        }
        if let Some(quota) = self.quota_us {
            if quota < QUOTA_US_MIN {
                return Err(format!(
                    "--quota-us {quota} is too small: the minimum is {QUOTA_US_MIN} us"
                ));
            }
            if quota > self.period_us {
                return Err(format!(
                    "--quota-us {quota} is larger than --period-us {}: the quota applies to \
                     each task, and one task cannot use more than one CPU",
                    self.period_us
                ));
            }
        }
        Ok(())
    }

    /// Apply `u` on top of `self` (validation is the caller's). A change
    /// of the per-task limit or of the smoothing bumps `cgroup_gen`.
    pub fn apply(&self, u: &Update) -> Tunables {
        let mut t = Tunables {
            slice_us: u.slice_us.unwrap_or(self.slice_us),
            slice_min_us: u.slice_min_us.unwrap_or(self.slice_min_us),
            slice_mode: u.slice_mode.unwrap_or(self.slice_mode),
            period_us: u.period_us.unwrap_or(self.period_us),
            quota_us: if u.no_quota {
                None
            } else {
                u.quota_us.or(self.quota_us)
            },
            guard_ms: u.guard_ms.unwrap_or(self.guard_ms),
            fifo_below_nice: u.fifo_below_nice.unwrap_or(self.fifo_below_nice),
            max_stall_us: u.max_stall_us.unwrap_or(self.max_stall_us),
            cgroup_gen: self.cgroup_gen,
            nr_cgroups: self.nr_cgroups,
        };
        if (t.quota_us, t.period_us, t.max_stall_us)
            != (self.quota_us, self.period_us, self.max_stall_us)
        {
            t.cgroup_gen += 1;
        }
        t
    }

    /// Encode for the BPF `config` map.
    pub fn to_bpf(&self) -> bpf_intf::fq_config {
        let ns = bpf_intf::consts_NSEC_PER_USEC as u64;
        bpf_intf::fq_config {
            slice_ns: self.slice_us * ns,
            slice_min_ns: self.slice_min_us * ns,
            period_ns: self.period_us * ns,
            quota_ns: self.quota_us.unwrap_or(0) * ns,
            guard_ns: self.guard_ms * 1000 * ns,
            fifo_below_nice: self.fifo_below_nice,
            slice_mode: match self.slice_mode {
                SliceMode::Fixed => bpf_intf::slice_mode_SLICE_FIXED,
                SliceMode::Split => bpf_intf::slice_mode_SLICE_SPLIT,
            },
            cg_gen: self.cgroup_gen,
            nr_cgroups: self.nr_cgroups,
            __pad: 0,
            max_stall_ns: self.max_stall_us * ns,
        }
    }

    /// Decode a `config_slots` map entry.
    pub fn from_bpf(c: &bpf_intf::fq_config) -> Tunables {
        let ns = bpf_intf::consts_NSEC_PER_USEC as u64;
        Tunables {
            slice_us: c.slice_ns / ns,
            slice_min_us: c.slice_min_ns / ns,
            slice_mode: if c.slice_mode == bpf_intf::slice_mode_SLICE_SPLIT {
                SliceMode::Split
            } else {
                SliceMode::Fixed
            },
            period_us: c.period_ns / ns,
            quota_us: (c.quota_ns != 0).then_some(c.quota_ns / ns),
            guard_ms: c.guard_ns / ns / 1000,
            fifo_below_nice: c.fifo_below_nice,
            max_stall_us: c.max_stall_ns / ns,
            cgroup_gen: c.cg_gen,
            nr_cgroups: c.nr_cgroups,
        }
    }
}

impl fmt::Display for Tunables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "slice={}us mode={} slice_min={}us ",
            self.slice_us, self.slice_mode, self.slice_min_us
        )?;
        match self.quota_us {
            Some(q) => write!(
                f,
                "quota={}us/period={}us ({:.1}% of a CPU per task)",
                q,
                self.period_us,
                q as f64 * 100.0 / self.period_us as f64
            )?,
            None => write!(f, "quota=unlimited")?,
        }
        write!(
            f,
            " fifo_below_nice={} guard={}ms",
            self.fifo_below_nice, self.guard_ms
        )?;
        match self.max_stall_us {
            0 => write!(f, " smooth=off"),
            s => write!(f, " smooth={s}us"),
        }
    }
}

fn check_range(name: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("{name} {v} is out of range: use {lo}..={hi}"))
    }
}

/// Raw bytes of a plain-old-data value, for BPF map updates.
pub fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a bindgen-generated repr(C) struct of integers.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// Read a plain-old-data value from BPF map bytes.
pub fn from_bytes<T: Copy>(b: &[u8]) -> Option<T> {
    if b.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: the length is checked and T is a repr(C) struct of integers,
    // valid for any bit pattern.
    Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const T) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_quota(q: u64, p: u64) -> Tunables {
        Tunables {
            quota_us: Some(q),
            period_us: p,
            ..Default::default()
        }
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(Tunables::default().validate(), Ok(()));
    }

    #[test]
    fn max_stall_is_off_or_in_range() {
        let t = |us| Tunables {
            max_stall_us: us,
            ..Default::default()
        };
        assert_eq!(t(0).validate(), Ok(()));
        assert_eq!(t(10_000).validate(), Ok(()));
        let e = t(500).validate().unwrap_err();
        assert!(
            e.contains("--max-stall-us 500") && e.contains("or 0 for off"),
            "{e}"
        );
        assert!(t(2_000_000).validate().is_err());
        let c = t(10_000).to_bpf();
        assert_eq!(c.max_stall_ns, 10_000_000);
        assert_eq!(Tunables::from_bpf(&c).max_stall_us, 10_000);
    }

    #[test]
    fn quota_checks() {
        assert_eq!(with_quota(2000, 10_000).validate(), Ok(()));
        assert_eq!(with_quota(10_000, 10_000).validate(), Ok(()));
        let e = with_quota(999, 10_000).validate().unwrap_err();
        assert!(e.contains("--quota-us 999 is too small"), "{e}");
        let e = with_quota(20_000, 10_000).validate().unwrap_err();
        assert!(e.contains("larger than --period-us 10000"), "{e}");
    }

    #[test]
    fn period_range() {
        for bad in [0, 999, 1_000_001] {
            let e = with_quota(1000, bad).validate().unwrap_err();
            assert!(
                e.starts_with(&format!("--period-us {bad} is out of range")),
                "{e}"
            );
        }
        assert_eq!(with_quota(1000, 1000).validate(), Ok(()));
        assert_eq!(with_quota(1000, 1_000_000).validate(), Ok(()));
    }

    #[test]
    fn slice_checks() {
        let t = Tunables {
            slice_us: 0,
            ..Default::default()
        };
        assert!(
            t.validate()
                .unwrap_err()
                .starts_with("--slice-us 0 is out of range")
        );
        let t = Tunables {
            slice_us: 5_000_000,
            ..Default::default()
        };
        assert!(t.validate().is_err());
        let t = Tunables {
            slice_us: 1000,
            slice_min_us: 2000,
            ..Default::default()
        };
        assert!(
            t.validate()
                .unwrap_err()
                .contains("--slice-min-us 2000 is larger")
        );
    }

    #[test]
    fn encode_decode_roundtrip() {
        let t = Tunables {
            slice_us: 3000,
            slice_min_us: 250,
            slice_mode: SliceMode::Split,
            period_us: 10_000,
            quota_us: Some(2000),
            guard_ms: 50,
            fifo_below_nice: -2,
            max_stall_us: 5000,
            cgroup_gen: 7,
            nr_cgroups: 3,
        };
        let c = t.to_bpf();
        assert_eq!(c.slice_ns, 3_000_000);
        assert_eq!(c.quota_ns, 2_000_000);
        assert_eq!(c.period_ns, 10_000_000);
        assert_eq!(c.guard_ns, 50_000_000);
        assert_eq!(c.slice_mode, bpf_intf::slice_mode_SLICE_SPLIT);
        let bytes = as_bytes(&c).to_vec();
        let back: bpf_intf::fq_config = from_bytes(&bytes).unwrap();
        assert_eq!(Tunables::from_bpf(&back), t);
    }

    #[test]
    fn no_quota_encodes_zero() {
        let c = Tunables::default().to_bpf();
        assert_eq!(c.quota_ns, 0);
        assert_eq!(Tunables::from_bpf(&c).quota_us, None);
    }

    #[test]
    fn update_applies_only_given_fields() {
        let base = with_quota(2000, 10_000);
        let u = Update {
            quota_us: Some(5000),
            ..Default::default()
        };
        let t = base.apply(&u);
        assert_eq!(t.quota_us, Some(5000));
        assert_eq!(t.period_us, 10_000);
        let t = t.apply(&Update {
            no_quota: true,
            ..Default::default()
        });
        assert_eq!(t.quota_us, None);
    }

    #[test]
    fn limit_change_bumps_generation() {
        let base = with_quota(2000, 10_000);
        let same = base.apply(&Update {
            quota_us: Some(2000),
            slice_us: Some(4000),
            ..Default::default()
        });
        assert_eq!(same.cgroup_gen, base.cgroup_gen);
        for u in [
            Update {
                quota_us: Some(5000),
                ..Default::default()
            },
            Update {
                period_us: Some(20_000),
                ..Default::default()
            },
            Update {
                max_stall_us: Some(base.max_stall_us + 1000),
                ..Default::default()
            },
            Update {
                no_quota: true,
                ..Default::default()
            },
        ] {
            assert_eq!(base.apply(&u).cgroup_gen, base.cgroup_gen + 1, "{u:?}");
        }
    }

    #[test]
    fn display_names_share() {
        let s = with_quota(2000, 10_000).to_string();
        assert!(
            s.contains("quota=2000us/period=10000us (20.0% of a CPU per task)"),
            "{s}"
        );
    }

    #[test]
    fn default_slice_follows_eevdf_base_slice() {
        let got: Vec<u64> = [0, 1, 2, 3, 4, 7, 8, 64, 256]
            .iter()
            .map(|&n| default_slice_us(n))
            .collect();
        assert_eq!(got, [750, 750, 1500, 1500, 2250, 2250, 3000, 3000, 3000]);
    }
}
