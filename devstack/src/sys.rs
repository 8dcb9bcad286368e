//! Thin wrappers over the few POSIX calls std does not expose.
//!
//! The workspace denies `unsafe_code`; these calls only pass integers to the
//! kernel and touch no memory of ours, so they are allowed here and nowhere else.

/// The signals the stack sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Term,
    Kill,
    /// Freezes the process (fault tests: a hung broker).
    Stop,
    Cont,
}

/// Sends `signal` to `pid`; returns false when the process does not exist
/// (or is not ours to signal).
pub(crate) fn send_signal(pid: u32, signal: Signal) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // A pid of 0 or -1 would signal a whole process group or everything.
    if pid <= 0 {
        return false;
    }
    let signal = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
        Signal::Stop => libc::SIGSTOP,
        Signal::Cont => libc::SIGCONT,
    };
    #[allow(unsafe_code)]
    // SAFETY: kill(2) takes two integers and reads no memory of ours.
    let result = unsafe { libc::kill(pid, signal) };
    result == 0
}

/// True when `pid` exists and is not a zombie waiting to be reaped.
pub(crate) fn pid_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

/// The command line of `pid`, arguments joined by spaces.
pub(crate) fn pid_command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let text = String::from_utf8_lossy(&raw);
    Some(text.trim_end_matches('\0').replace('\0', " "))
}

/// The effective user id of this process.
pub(crate) fn effective_uid() -> u32 {
    #[allow(unsafe_code)]
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    uid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_running() {
        let pid = std::process::id();
        assert!(pid_running(pid));
        assert!(pid_command_line(pid).is_some());
        assert!(!send_signal(0, Signal::Term));
    }
}
