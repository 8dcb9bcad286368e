//! Waits already under way when a thread is attached.
//!
//! The `sched_switch` tracepoint samples a thread when it leaves the CPU,
//! so a thread that blocked before the profile started would show nothing
//! until it next runs: a thread blocked for a whole profile (a main thread
//! in `join`, a listener in `accept`) would be missing from off-CPU and
//! wall profiles. At attach, a thread found sleeping is given the wait's
//! user stack from procfs instead: the registers of the system call it
//! sleeps in (`/proc/PID/task/TID/syscall`: number, arguments, stack
//! pointer, program counter) and the top of its stack read from
//! `/proc/PID/mem`, which the DWARF unwinder walks as it walks a sample's
//! stack copy. The kernel part of such a wait is left out (procfs gives it
//! only as names).
//!
//! procfs gives no frame pointer register, which code built with frame
//! pointers needs (its unwind rules find the caller from `rbp`). The
//! frames that saved one are on the stack: [`frame_pointer_candidates`]
//! finds the words that look like a saved frame (a higher stack address,
//! then a return address), and the unwinder keeps the longest walk among
//! them.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use super::perf::{RawSample, UserRegs, WaitState, STACK_BYTES};
use crate::targets::{parse_stat_state, ProcFs};

/// The wait `tid` of `pid` is in now, if it sleeps: its user registers
/// and stack, for the unwinder, and its state as the leaf.
pub fn wait_under_way(procfs: &ProcFs, pid: u32, tid: u32) -> Option<RawSample> {
    let task = |name: &str| procfs.proc_file(pid, &format!("task/{tid}/{name}"));
    let stat = std::fs::read_to_string(task("stat")).ok()?;
    let wait = match parse_stat_state(&stat)? {
        'S' => WaitState::Sleeping,
        'D' => WaitState::Uninterruptible,
        _ => return None,
    };
    let syscall = std::fs::read_to_string(task("syscall")).ok()?;
    let (sp, ip) = syscall_registers(&syscall)?;
    let stack = read_stack(&procfs.proc_file(pid, "mem"), sp)?;
    Some(RawSample {
        pid,
        tid,
        regs: Some(UserRegs { ip, sp, bp: 0 }),
        stack,
        wait: Some(wait),
        ..RawSample::default()
    })
}

/// Stack pointer and program counter of `/proc/PID/task/TID/syscall`: the
/// last two fields of `NR ARG1..ARG6 SP PC`, or of `-1 SP PC` for a thread
/// blocked outside a system call; `running` has neither.
pub fn syscall_registers(line: &str) -> Option<(u64, u64)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 3 {
        return None;
    }
    let hex = |s: &str| u64::from_str_radix(s.strip_prefix("0x")?, 16).ok();
    let (sp, pc) = (
        hex(fields[fields.len() - 2])?,
        hex(fields[fields.len() - 1])?,
    );
    (sp != 0 && pc != 0).then_some((sp, pc))
}

/// Most candidate frame pointers tried per wait: the walk is redone for
/// each, once per thread found sleeping at attach.
pub const MAX_CANDIDATES: usize = 16;

/// Addresses in the stack copy (which starts at `sp`) where a frame built
/// with a frame pointer may begin, nearest first: a word holding a higher
/// address inside the copy (the caller's saved frame pointer) followed by a
/// word that is not (a return address).
pub fn frame_pointer_candidates(stack: &[u8], sp: u64) -> Vec<u64> {
    let end = sp + stack.len() as u64;
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(stack.get(i..i + 8)?.try_into().ok()?))
    };
    let in_stack = |v: u64| (sp..end).contains(&v);
    (0..stack.len().saturating_sub(15))
        .step_by(8)
        .filter_map(|i| {
            let here = sp + i as u64;
            let (saved, ret) = (word(i)?, word(i + 8)?);
            (in_stack(saved) && saved > here && !in_stack(ret) && ret > 0x1000).then_some(here)
        })
        .take(MAX_CANDIDATES)
        .collect()
}

/// Up to [`STACK_BYTES`] of the stack from `sp` up, as a sample's copy
/// would hold; shorter where the stack's mapping ends.
fn read_stack(mem: &std::path::Path, sp: u64) -> Option<Vec<u8>> {
    let mut file = File::open(mem).ok()?;
    file.seek(SeekFrom::Start(sp)).ok()?;
    let mut stack = vec![0u8; STACK_BYTES as usize];
    let mut filled = 0;
    // A read stops at the end of the mapping; what was read is kept.
    while filled < stack.len() {
        match file.read(&mut stack[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    stack.truncate(filled);
    (!stack.is_empty()).then_some(stack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_registers_of_a_sleeping_system_call() {
        let line =
            "230 0x0 0x0 0x7ffe5c151c20 0x7ffe5c151c60 0x0 0x0 0x7ffe5c151c08 0x7f7fd866f503\n";
        assert_eq!(
            syscall_registers(line),
            Some((0x7ffe_5c15_1c08, 0x7f7f_d866_f503))
        );
        assert_eq!(
            syscall_registers("-1 0x7ffd10 0x4005d6\n"),
            Some((0x7ffd10, 0x4005d6))
        );
        assert_eq!(syscall_registers("running\n"), None);
        assert_eq!(syscall_registers("-1 0x0 0x0\n"), None);
    }

    #[test]
    fn finds_saved_frames_on_a_stack() {
        let sp = 0x7000_0000u64;
        let mut stack = vec![0u8; 64];
        let mut put = |at: usize, v: u64| stack[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        put(0, 0x40_1000); // a return address, no frame before it
        put(16, sp + 48); // a saved frame pointer ...
        put(24, 0x40_2000); // ... and its return address
        put(48, sp + 8); // pointing down: not a saved frame
        put(56, 0x40_3000);
        assert_eq!(frame_pointer_candidates(&stack, sp), [sp + 16]);
        assert!(frame_pointer_candidates(&[], sp).is_empty());
    }

    #[test]
    fn a_sleeping_thread_gives_its_registers_and_stack() {
        let procfs = ProcFs::default();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("run sleep");
        let pid = child.id();
        let mut found = None;
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            found = wait_under_way(&procfs, pid, pid);
            if found.is_some() {
                break;
            }
        }
        child.kill().ok();
        child.wait().ok();
        let wait = found.expect("sleep(1) sleeps in clock_nanosleep");
        assert_eq!(wait.wait, Some(WaitState::Sleeping));
        assert!(wait.regs.is_some_and(|r| r.sp != 0 && r.ip != 0));
        assert!(!wait.stack.is_empty());
        // Gone: nothing.
        assert!(wait_under_way(&procfs, pid, pid).is_none());
    }
}
