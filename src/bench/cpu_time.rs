//! A thread's or a process's CPU time as the kernel counts it (`/proc`): time on a CPU to the
//! nanosecond (`schedstat`), and its user and system parts in clock ticks (`stat`). The
//! echo ceiling reads it around each slice to show who was busy, and what a datagram cost
//! each server in user and in system time.

use std::path::Path;

/// CPU time so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Nanoseconds on a CPU.
    pub run_ns: u64,
    /// Clock ticks in user mode.
    pub user_ticks: u64,
    /// Clock ticks in the kernel.
    pub system_ticks: u64,
}

impl CpuTime {
    /// One thread of this process, by its thread id.
    pub fn of_thread(tid: i32) -> std::io::Result<CpuTime> {
        CpuTime::of_task(&Path::new("/proc/self/task").join(tid.to_string()))
    }

    /// Every thread of process `pid`, summed.
    pub fn of_process(pid: u32) -> std::io::Result<CpuTime> {
        let mut sum = CpuTime::default();
        for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            // A thread that ended between the listing and the read has nothing to add.
            if let Ok(task) = CpuTime::of_task(&entry?.path()) {
                sum = sum.plus(task);
            }
        }
        Ok(sum)
    }

    fn of_task(dir: &Path) -> std::io::Result<CpuTime> {
        let schedstat = std::fs::read_to_string(dir.join("schedstat"))?;
        let stat = std::fs::read_to_string(dir.join("stat"))?;
        parse(&schedstat, &stat).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} does not read as /proc's stat", dir.display()),
            )
        })
    }

    fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            run_ns: self.run_ns + other.run_ns,
            user_ticks: self.user_ticks + other.user_ticks,
            system_ticks: self.system_ticks + other.system_ticks,
        }
    }

    /// What was spent from `earlier` to this.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            user_ticks: self.user_ticks.saturating_sub(earlier.user_ticks),
            system_ticks: self.system_ticks.saturating_sub(earlier.system_ticks),
        }
    }

    /// Added up.
    pub fn add(&mut self, other: CpuTime) {
        *self = self.plus(other);
    }
}

/// `schedstat`'s first field (ns on a CPU) and `stat`'s utime and stime (fields 14 and 15;
/// counted after the command name's closing parenthesis, which may itself hold spaces).
fn parse(schedstat: &str, stat: &str) -> Option<CpuTime> {
    let run_ns = schedstat.split_whitespace().next()?.parse().ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    Some(CpuTime {
        run_ns,
        user_ticks: fields.next()?.parse().ok()?,
        system_ticks: fields.next()?.parse().ok()?,
    })
}

/// Clock ticks a second (`sysconf(_SC_CLK_TCK)`; 100 where it cannot be read).
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system setting.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// The calling thread's id.
pub fn this_thread() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_reads_past_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 731 52 0 0 20 0 1";
        let time = parse("123456789 55 66\n", stat).expect("reads");
        assert_eq!(
            time,
            CpuTime {
                run_ns: 123_456_789,
                user_ticks: 731,
                system_ticks: 52
            }
        );
        assert_eq!(parse("x", stat), None);
        assert_eq!(parse("1 2 3", "no name"), None);
    }

    #[test]
    fn a_busy_thread_shows_time_on_a_cpu() {
        let before = CpuTime::of_thread(this_thread()).expect("this thread reads");
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spent = CpuTime::of_thread(this_thread()).unwrap().since(before);
        assert!(spent.run_ns >= 20_000_000, "{spent:?}");
        let process = CpuTime::of_process(std::process::id()).unwrap();
        assert!(process.run_ns >= spent.run_ns);
    }
}
