// SPDX-License-Identifier: GPL-2.0
//! The CPU topology the BPF side needs: a dense LLC index for every CPU id,
//! the number of CPUs of each LLC and, for every CPU, the next CPU of its
//! LLC (a ring per LLC), checked against the BPF side's fixed array sizes.

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
    /// The next CPU id of the same LLC after each CPU id, in increasing id
    /// order, the last one's being the first's: the BPF side walks an
    /// LLC's CPUs with it, however far apart their ids are (SMT siblings
    /// 128 ids apart). CPUs not present map to themselves.
    pub llc_next: Vec<u32>,
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
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); index.len()];
        for &(cpu, llc) in pairs {
            let i = index[&llc];
            cpu_llc[cpu] = i;
            llc_nr_cpus[i as usize] += 1;
            members[i as usize].push(cpu);
        }
        let mut llc_next: Vec<u32> = (0..=max_cpu as u32).collect();
        for cpus in &mut members {
            cpus.sort_unstable();
            for (k, &cpu) in cpus.iter().enumerate() {
                llc_next[cpu] = cpus[(k + 1) % cpus.len()] as u32;
            }
        }
        Ok(Topo {
            cpu_llc,
            llc_nr_cpus,
            llc_next,
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
        // Rings per LLC: 0 -> 1 -> 5 -> 0 and 2 -> 3 -> 2; CPU 4 is absent.
        assert_eq!(t.llc_next, vec![1, 5, 3, 2, 4, 0]);
    }

    #[test]
    fn llc_ring_spans_distant_siblings() {
        // Two LLCs of 2 cores with SMT siblings 4 ids apart (as 128 apart
        // on a 256-thread host): 0,1,4,5 and 2,3,6,7.
        let pairs: Vec<(usize, usize)> = (0..8).map(|c| (c, (c / 2) % 2)).collect();
        let t = Topo::from_pairs(&pairs).unwrap();
        let ring = |start: usize| {
            let mut v = vec![start];
            let mut c = t.llc_next[start] as usize;
            while c != start {
                v.push(c);
                c = t.llc_next[c] as usize;
            }
            v
        };
        assert_eq!(ring(1), vec![1, 4, 5, 0]);
        assert_eq!(ring(6), vec![6, 7, 2, 3]);
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
