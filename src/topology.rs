// SPDX-License-Identifier: GPL-2.0
//! The CPU topology the BPF side needs: a dense LLC index for every CPU id
//! and the number of CPUs of each LLC, checked against the BPF side's
//! fixed array sizes.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Context, Result, bail};

use crate::bpf_intf;

const MAX_CPUS: usize = bpf_intf::consts_MAX_CPUS as usize;
const MAX_LLCS: usize = bpf_intf::consts_MAX_LLCS as usize;

#[derive(Debug, PartialEq, Eq)]
pub struct Topo {
    /// LLC index (0..nr_llcs) of each CPU id; CPUs not present map to 0.
    pub cpu_llc: Vec<u32>,
    /// Number of CPUs of each LLC index.
    pub llc_nr_cpus: Vec<u32>,
}

impl Topo {
    /// Build from (cpu id, kernel LLC id) pairs. LLC ids may be sparse;
    /// they are numbered densely in increasing order.
    pub fn from_pairs(pairs: &[(usize, usize)]) -> Result<Topo> {
        if pairs.is_empty() {
            bail!("no CPUs found in the topology");
        }
        let mut index: BTreeMap<usize, u32> = BTreeMap::new();
        for &(_, llc) in pairs {
            let n = index.len() as u32;
            index.entry(llc).or_insert(n);
        }
        // Dense indices in increasing LLC id order.
        for (i, v) in index.values_mut().enumerate() {
            *v = i as u32;
        }
        let max_cpu = pairs.iter().map(|&(c, _)| c).max().unwrap_or(0);
        if max_cpu >= MAX_CPUS {
            bail!("this host has CPU id {max_cpu}; scx_fairquota handles CPU ids below {MAX_CPUS}");
        }
        if index.len() > MAX_LLCS {
            bail!(
                "this host has {} last-level caches; scx_fairquota handles at most {MAX_LLCS}",
                index.len()
            );
        }
        let mut cpu_llc = vec![0u32; max_cpu + 1];
        let mut llc_nr_cpus = vec![0u32; index.len()];
        for &(cpu, llc) in pairs {
            let i = index[&llc];
            cpu_llc[cpu] = i;
            llc_nr_cpus[i as usize] += 1;
        }
        Ok(Topo {
            cpu_llc,
            llc_nr_cpus,
        })
    }

    pub fn nr_llcs(&self) -> u32 {
        self.llc_nr_cpus.len() as u32
    }
}

impl fmt::Display for Topo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus: u32 = self.llc_nr_cpus.iter().sum();
        write!(
            f,
            "{cpus} CPUs in {} LLCs (CPUs per LLC: {:?})",
            self.nr_llcs(),
            self.llc_nr_cpus
        )
    }
}

/// Read the host's topology.
pub fn read() -> Result<Topo> {
    let topo = scx_utils::Topology::new().context("reading the CPU topology")?;
    let pairs: Vec<(usize, usize)> = topo
        .all_cpus
        .values()
        .map(|cpu| (cpu.id, cpu.llc_id))
        .collect();
    Topo::from_pairs(&pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_llc_indices() {
        let t = Topo::from_pairs(&[(0, 8), (1, 8), (2, 3), (3, 3), (5, 8)]).unwrap();
        assert_eq!(t.nr_llcs(), 2);
        assert_eq!(t.cpu_llc, vec![1, 1, 0, 0, 0, 1]);
        assert_eq!(t.llc_nr_cpus, vec![2, 3]);
    }

    #[test]
    fn limits_are_errors() {
        assert!(Topo::from_pairs(&[]).is_err());
        let e = Topo::from_pairs(&[(MAX_CPUS, 0)]).unwrap_err().to_string();
        assert!(e.contains("CPU id"), "{e}");
        let many: Vec<(usize, usize)> = (0..=MAX_LLCS).map(|i| (i, i)).collect();
        let e = Topo::from_pairs(&many).unwrap_err().to_string();
        assert!(e.contains("last-level caches"), "{e}");
    }
}
