//! Sampling a process's CPU time and memory from Linux `/proc` (proc(5)):
//! `utime` and `stime` of `/proc/PID/stat` (fields 14 and 15, in clock ticks of
//! [`TICKS_PER_SECOND`]; every thread of the process, living or ended, and not its
//! children), `VmHWM` and `VmRSS` of `/proc/PID/status` (KiB), and the process's
//! descendants from `/proc/PID/task/TID/children`.
//!
//! Knows `/proc` only; must not know what the process is.

use std::fs;

use serde::Serialize;

/// `USER_HZ`, the unit of `/proc/PID/stat` times: 100 on every Linux
/// architecture the benchmark runs on (x86-64, aarch64).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// `utime + stime`, clock ticks (children excluded).
    pub cpu_ticks: u64,
    /// Peak resident set size so far (`VmHWM`), KiB.
    pub peak_rss_kib: u64,
    /// Resident set size now (`VmRSS`), KiB.
    pub rss_kib: u64,
    /// Context switches (voluntary and not) of the living threads so far.
    pub context_switches: u64,
}

/// Reads process `pid`. Errors (as text) when it is gone or `/proc` is
/// unreadable.
pub fn sample(pid: u32) -> Result<Sample, String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    let cpu_ticks =
        cpu_ticks_of(&stat).ok_or_else(|| format!("/proc/{pid}/stat: unexpected format"))?;
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    Ok(Sample {
        cpu_ticks,
        peak_rss_kib: status_kib(&status, "VmHWM:").unwrap_or(0),
        rss_kib: status_kib(&status, "VmRSS:").unwrap_or(0),
        context_switches: context_switches(pid),
    })
}

/// The context switches (voluntary and not) of every living thread of `pid`; 0
/// when `/proc` cannot say.
pub fn context_switches(pid: u32) -> u64 {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("status")).ok())
        .map(|status| {
            status_kib(&status, "voluntary_ctxt_switches:").unwrap_or(0)
                + status_kib(&status, "nonvoluntary_ctxt_switches:").unwrap_or(0)
        })
        .sum()
}

/// `utime + stime` from the text of `/proc/PID/stat` (the fields after the
/// command name, which may itself hold spaces and parentheses).
pub fn cpu_ticks_of(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The first number after `key` at the start of a line of `/proc/PID/status`.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// The whole machine's CPU time so far, from the first (`cpu`) line of
/// `/proc/stat`, in clock ticks of [`TICKS_PER_SECOND`] summed over every CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct MachineSample {
    /// `user + nice + system + irq + softirq`: time some task or interrupt ran
    /// (guest time is inside `user`).
    pub busy_ticks: u64,
    /// `idle + iowait`: time the CPUs had nothing to run.
    pub idle_ticks: u64,
    /// `steal`: time the hypervisor ran something else on our virtual CPUs.
    pub steal_ticks: u64,
}

/// Reads the machine's CPU time. Errors (as text) when `/proc/stat` is unreadable
/// or not in the expected format.
pub fn machine() -> Result<MachineSample, String> {
    let stat = fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
    machine_of(&stat).ok_or_else(|| "/proc/stat: unexpected format".to_owned())
}

/// [`machine`] from the text of `/proc/stat` (`cpu  user nice system idle iowait
/// irq softirq steal guest guest_nice`; fields missing on old kernels read 0).
pub fn machine_of(stat: &str) -> Option<MachineSample> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    if f.len() < 4 {
        return None;
    }
    Some(MachineSample {
        busy_ticks: at(0) + at(1) + at(2) + at(5) + at(6),
        idle_ticks: at(3) + at(4),
        steal_ticks: at(7),
    })
}

/// Every living descendant of `pid` (children, their children, ...), in no
/// particular order; empty when there are none or `/proc` cannot say.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        let Ok(tasks) = fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            if let Ok(text) = fs::read_to_string(path) {
                for child in text
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok())
                {
                    if !out.contains(&child) {
                        out.push(child);
                        stack.push(child);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_tricky_command_name() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 17 5 0 0 20 0 3 0 1000 1 1";
        assert_eq!(cpu_ticks_of(stat), Some(22));
        assert_eq!(cpu_ticks_of("garbage"), None);
    }

    #[test]
    fn machine_time_from_proc_stat() {
        let stat = "cpu  100 2 30 500 7 1 4 9 0 0\ncpu0 50 1 15 250 3 0 2 4 0 0\nintr 1\n";
        assert_eq!(
            machine_of(stat),
            Some(MachineSample {
                busy_ticks: 137,
                idle_ticks: 507,
                steal_ticks: 9
            })
        );
        assert_eq!(machine_of("cpu0 1 2 3 4\n"), None);
        assert_eq!(machine_of("cpu  1 x 3 4\n"), None);
        let now = machine().unwrap();
        assert!(now.busy_ticks + now.idle_ticks > 0, "{now:?}");
    }

    #[test]
    fn this_process_can_be_sampled() {
        let s = sample(std::process::id()).unwrap();
        assert!(s.peak_rss_kib >= s.rss_kib && s.rss_kib > 0, "{s:?}");
        assert!(sample(u32::MAX).is_err());
    }
}
