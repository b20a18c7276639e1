// SPDX-License-Identifier: GPL-2.0
include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
