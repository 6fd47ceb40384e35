//! What the bench asks of the operating system: a listener with a deep accept queue, the open
//! files limit raised, and a process tree's CPU seconds and peak RSS (from `/proc`).

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// Binds `addr` with an accept backlog of 8192 (tokio's default of 1024 drops bursts of
/// thousands of connects).
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(8192)
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the new soft limit. Child
/// processes inherit it.
pub fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur
    }
}

/// `pid` and all its descendants, from `/proc/*/stat`.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(fields) = stat_fields(p)
                && let Some(pp) = fields.get(1).and_then(|s| s.parse().ok())
            {
                parents.push((p, pp));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let cur = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == cur).map(|(p, _)| *p));
        i += 1;
    }
    tree
}

/// Fields of `/proc/pid/stat` after the command name (index 0 is the state).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// User + system CPU seconds used so far by `pid` and its descendants.
pub fn cpu_seconds(pid: u32) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    process_tree(pid)
        .into_iter()
        .filter_map(stat_fields)
        .map(|f| {
            let t = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
            // utime and stime are fields 14 and 15 of stat, 11 and 12 after the name.
            (t(11) + t(12)) / hz
        })
        .sum()
}

/// Peak RSS (`VmHWM`) in MiB of `pid` and its descendants, summed.
pub fn peak_rss_mib(pid: u32) -> f64 {
    process_tree(pid)
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .sum::<f64>()
        / 1024.0
}

/// Resets the peak RSS of `pid` and its descendants to their current RSS, so the next
/// [`peak_rss_mib`] covers one phase only (`/proc/pid/clear_refs` value 5, Linux ≥ 4.0).
pub fn reset_peak_rss(pid: u32) {
    for p in process_tree(pid) {
        let _ = std::fs::write(format!("/proc/{p}/clear_refs"), "5");
    }
}

/// CPU and peak RSS of a process over one phase.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    pid: u32,
    cpu_start: f64,
}

impl Usage {
    /// Starts measuring `pid` (and its children).
    pub fn start(pid: u32) -> Self {
        reset_peak_rss(pid);
        Self {
            pid,
            cpu_start: cpu_seconds(pid),
        }
    }

    /// CPU seconds since `start` and the peak RSS in MiB.
    pub fn finish(self) -> (f64, f64) {
        (
            cpu_seconds(self.pid) - self.cpu_start,
            peak_rss_mib(self.pid),
        )
    }
}
