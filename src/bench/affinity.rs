//! Which CPU a thread runs on: the echo ceiling keeps the server it measures on one CPU and
//! its load client on the other, the same for every side, so that neither chases the other
//! from CPU to CPU (and from cache to cache) as the scheduler balances them.

/// Keeps thread `tid` (0: the calling thread) on CPU `cpu` alone.
#[cfg(target_os = "linux")]
pub fn pin(tid: i32, cpu: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a whole cpu_set_t, its size given.
    let done = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Elsewhere threads go where the scheduler puts them.
#[cfg(not(target_os = "linux"))]
pub fn pin(_tid: i32, _cpu: usize) -> std::io::Result<()> {
    Ok(())
}

/// Keeps every thread of process `pid` on CPU `cpu` (threads it starts later inherit it
/// from the one that starts them).
pub fn pin_process(pid: u32, cpu: usize) -> std::io::Result<()> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let name = task?.file_name();
        if let Some(tid) = name.to_str().and_then(|t| t.parse().ok()) {
            pin(tid, cpu)?;
        }
    }
    Ok(())
}

/// CPUs this process may run on.
pub fn available() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
