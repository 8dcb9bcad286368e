//! Diagnostic commands (`JFR.start`, `JFR.dump`...) sent to a HotSpot JVM
//! the way `jcmd` sends them, through the JVM's attach socket.
//!
//! Measured here on a loaded two-core machine, one `jcmd PID JFR.dump`
//! took 0.3 s of CPU and up to 4 s of wall time (jcmd is itself a JVM that
//! must start), while the same command over the socket took 60 ms of wall
//! time and next to no CPU. A dump per window makes that difference the
//! plugin's whole cost, so the agent speaks the protocol itself and keeps
//! the `jcmd` executable as a fallback.
//!
//! Protocol (HotSpot, Linux): the JVM listens on `/tmp/.java_pid<NSPID>`
//! once its attach listener runs; it starts it on SIGQUIT when the file
//! `.attach_pid<NSPID>` exists in its working directory. A request is
//! `1\0jcmd\0<command line>\0\0\0`; the answer is a status line (`0` when
//! the command ran) followed by the command's output.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tracing::debug;

use crate::plugin::identify::{classify, Classified};
use crate::targets::ProcFs;

/// How long a command may take, reply included.
const TIMEOUT: Duration = Duration::from_secs(20);
/// How long a JVM gets to open its attach socket after SIGQUIT.
const LISTENER_WAIT: Duration = Duration::from_secs(10);

/// Sends diagnostic commands to one JVM.
#[derive(Debug, Clone)]
pub struct Attach {
    procfs: ProcFs,
    pid: u32,
    jcmd: PathBuf,
}

impl Attach {
    pub fn new(procfs: ProcFs, pid: u32, jcmd: PathBuf) -> Self {
        Attach { procfs, pid, jcmd }
    }

    /// Runs a diagnostic command and returns its output. The socket is
    /// tried first; when it cannot be used at all, `jcmd`.
    pub fn command(&self, line: &str) -> io::Result<String> {
        match self.over_socket(line) {
            Ok(output) => Ok(output),
            Err(e) if e.kind() == io::ErrorKind::Other => Err(e),
            Err(e) => {
                debug!(pid = self.pid, error = %e, "attach socket unusable, running jcmd");
                self.with_jcmd(line)
            }
        }
    }

    /// The pid as the JVM knows itself (the last `NSpid` of its status,
    /// which differs from ours inside a container).
    fn namespace_pid(&self) -> u32 {
        let status = self.procfs.proc_file(self.pid, "status");
        fs::read_to_string(status)
            .ok()
            .and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("NSpid:"))?;
                line.split_whitespace().last()?.parse().ok()
            })
            .unwrap_or(self.pid)
    }

    fn socket_path(&self, nspid: u32) -> PathBuf {
        self.procfs
            .in_root(self.pid, Path::new(&format!("/tmp/.java_pid{nspid}")))
    }

    fn over_socket(&self, line: &str) -> io::Result<String> {
        let nspid = self.namespace_pid();
        let socket = self.socket_path(nspid);
        if !socket.exists() {
            self.start_listener(nspid, &socket)?;
        }
        let mut stream = UnixStream::connect(&socket)?;
        stream.set_read_timeout(Some(TIMEOUT))?;
        stream.set_write_timeout(Some(TIMEOUT))?;
        let mut request = Vec::with_capacity(line.len() + 16);
        for part in ["1", "jcmd", line, "", ""] {
            request.extend_from_slice(part.as_bytes());
            request.push(0);
        }
        stream.write_all(&request)?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        parse_reply(&reply)
    }

    /// Asks the JVM to open its attach socket: the trigger file, then
    /// SIGQUIT (sent with `kill`, the agent having no unsafe code).
    fn start_listener(&self, nspid: u32, socket: &Path) -> io::Result<()> {
        // SIGQUIT kills most other programs: only a JVM gets it.
        let maps = self.procfs.maps(self.pid)?;
        let paths: Vec<&str> = maps.iter().map(|m| m.path.as_str()).collect();
        if !matches!(classify(&paths, None), Classified::Jvm { .. }) {
            return Err(io::Error::other(format!(
                "pid {} is not a JVM (no libjvm mapped)",
                self.pid
            )));
        }
        let cwd = self.procfs.proc_file(self.pid, "cwd");
        let trigger = cwd.join(format!(".attach_pid{nspid}"));
        fs::write(&trigger, b"")?;
        let sent = Command::new("kill")
            .args(["-QUIT", &self.pid.to_string()])
            .status();
        let deadline = Instant::now() + LISTENER_WAIT;
        let mut opened = false;
        if matches!(sent, Ok(status) if status.success()) {
            while Instant::now() < deadline {
                if socket.exists() {
                    opened = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = fs::remove_file(&trigger);
        if opened {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                "the JVM did not open its attach socket",
            ))
        }
    }

    fn with_jcmd(&self, line: &str) -> io::Result<String> {
        let out = Command::new(&self.jcmd)
            .arg(self.pid.to_string())
            .args(line.split_whitespace())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(io::Error::other(format!(
                "jcmd exited with {}: {}{}",
                out.status,
                text.trim(),
                stderr.trim()
            )));
        }
        // jcmd prints `PID:` before the command's own output.
        Ok(text
            .split_once('\n')
            .map_or(text.clone(), |(_, rest)| rest.to_owned()))
    }
}

/// The output of a reply whose status line is `0`; any other status is
/// the JVM refusing the command, reported as [`io::ErrorKind::Other`] so
/// the caller does not retry it with jcmd.
pub fn parse_reply(reply: &str) -> io::Result<String> {
    let (status, output) = reply.split_once('\n').unwrap_or((reply, ""));
    match status.trim() {
        "0" => Ok(output.to_owned()),
        "" => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the JVM closed the attach socket without a reply",
        )),
        code => Err(io::Error::other(format!(
            "the JVM refused the command (status {code}): {}",
            output.trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_carry_a_status_line() {
        let ok = parse_reply("0\nDumped recording \"odp\", 122.3 kB written to:\n\n/tmp/c.jfr\n");
        assert!(ok.unwrap().starts_with("Dumped recording"));
        let refused = parse_reply("101\nProtocol mismatch").unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::Other);
        assert!(refused.to_string().contains("Protocol mismatch"));
        assert_eq!(
            parse_reply("").unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }
}
