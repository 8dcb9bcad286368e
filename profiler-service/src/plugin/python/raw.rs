//! py-spy's `--format raw` output: one folded stack per line, root first,
//! frames separated by `;`, then a space and the sample count.
//!
//! With `--threads` the root frame is the thread, `thread (TID): NAME` or
//! `thread (TID)`, where TID is the OS thread id. Python frames read
//! `function (file.py:line)`; with `--native`, native ones read
//! `function (libfoo.so)` or `0xADDR (libfoo.so)` when unnamed.

use odp_core::Frame;

/// One aggregated stack of a py-spy run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawStack {
    /// The OS thread id, when py-spy ran with `--threads`.
    pub tid: Option<u32>,
    pub thread_name: Option<String>,
    /// Root first.
    pub frames: Vec<Frame>,
    pub count: u64,
}

/// The stacks of a raw output and how many lines could not be read (a
/// line truncated by a crash, say), which are skipped.
pub fn parse(text: &str) -> (Vec<RawStack>, usize) {
    let mut stacks = Vec::new();
    let mut malformed = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match parse_line(line) {
            Some(stack) => stacks.push(stack),
            None => malformed += 1,
        }
    }
    (stacks, malformed)
}

fn parse_line(line: &str) -> Option<RawStack> {
    let (folded, count) = line.trim_end().rsplit_once(' ')?;
    let count: u64 = count.parse().ok()?;
    let mut parts = folded.split(';').peekable();
    let mut tid = None;
    let mut thread_name = None;
    if let Some((id, name)) = parts.peek().and_then(|first| parse_thread(first)) {
        tid = id;
        thread_name = name;
        parts.next();
    }
    let frames: Vec<Frame> = parts.map(parse_frame).collect();
    if frames.is_empty() {
        return None;
    }
    Some(RawStack {
        tid,
        thread_name,
        frames,
        count,
    })
}

/// `thread (123): MainThread` → (Some(123), Some("MainThread")). py-spy
/// prints the id in hex (`0x7F..`) when it has no OS thread id; that is a
/// pthread handle, not a tid, and is not used.
fn parse_thread(frame: &str) -> Option<(Option<u32>, Option<String>)> {
    let rest = frame.strip_prefix("thread (")?;
    let (id, rest) = rest.split_once(')')?;
    let tid = id.parse().ok();
    let name = rest
        .strip_prefix(": ")
        .map(str::to_owned)
        .filter(|n| !n.is_empty());
    Some((tid, name))
}

/// One frame: `name (location)` or a bare name.
pub fn parse_frame(text: &str) -> Frame {
    let Some((name, location)) = text.strip_suffix(')').and_then(|t| t.rsplit_once(" (")) else {
        return Frame::function(text);
    };
    let (file, line) = match location.rsplit_once(':') {
        Some((file, line)) => match line.parse::<u32>() {
            Ok(line) => (file, Some(line)),
            Err(_) => (location, None),
        },
        None => (location, None),
    };
    if line.is_none() {
        // A native frame: the location is the library it lives in.
        let function = if is_address(name) { "[unknown]" } else { name };
        return Frame::function(function).with_module(file);
    }
    Frame {
        function: name.to_owned(),
        module: python_module(file),
        file: Some(file.to_owned()),
        line,
    }
}

fn is_address(name: &str) -> bool {
    name.strip_prefix("0x")
        .is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The dotted module of a source file as py-spy shortens it:
/// `requests/api.py` → `requests.api`, `hot.py` → `hot`. Other files (a
/// Cython `.pyx`, C sources with `--native`) keep their name.
fn python_module(file: &str) -> String {
    match file.strip_suffix(".py") {
        Some(stem) => stem
            .trim_start_matches('/')
            .trim_start_matches("<frozen ")
            .replace('/', "."),
        None => file.to_owned(),
    }
}

/// py-spy's closing summary on stderr, `... Samples: 101 Errors: 2`:
/// the samples taken and the ones it failed to read.
pub fn parse_summary(stderr: &str) -> Option<(u64, u64)> {
    let line = stderr.lines().rev().find(|l| l.contains("Samples: "))?;
    let after = &line[line.find("Samples: ")? + "Samples: ".len()..];
    let mut words = after.split_whitespace();
    let samples = words.next()?.parse().ok()?;
    let errors = match (words.next(), words.next()) {
        (Some("Errors:"), Some(n)) => n.parse().ok()?,
        _ => 0,
    };
    Some((samples, errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_and_python_frames() {
        let text = "thread (30032): MainThread;<module> (hot.py:18);main (hot.py:15);crunch_numbers (hot.py:5) 73\n\
                    thread (30074);run (threading.py:982) 2\n";
        let (stacks, malformed) = parse(text);
        assert_eq!(malformed, 0);
        assert_eq!(stacks.len(), 2);
        let first = &stacks[0];
        assert_eq!(
            (first.tid, first.thread_name.as_deref(), first.count),
            (Some(30032), Some("MainThread"), 73)
        );
        assert_eq!(
            first.frames[2],
            Frame {
                function: "crunch_numbers".into(),
                module: "hot".into(),
                file: Some("hot.py".into()),
                line: Some(5),
            }
        );
        assert_eq!(first.frames[0].function, "<module>");
        assert_eq!(
            (stacks[1].tid, stacks[1].thread_name.as_deref()),
            (Some(30074), None)
        );
        assert_eq!(stacks[1].frames[0].module, "threading");
        let (hex, _) = parse("thread (0x7F12AB): worker;f (a.py:1) 1\n");
        assert_eq!(
            (hex[0].tid, hex[0].thread_name.as_deref()),
            (None, Some("worker"))
        );
        assert_eq!(hex[0].frames, vec![parse_frame("f (a.py:1)")]);
    }

    #[test]
    fn stacks_without_threads_and_native_frames() {
        let text =
            "0x7fa5f784524a (libc.so.6);thread_run (libpython3.11.so.1.0);sleeper (hot.py:11) 2\n";
        let (stacks, _) = parse(text);
        let frames = &stacks[0].frames;
        assert_eq!(stacks[0].tid, None);
        assert_eq!(
            frames[0],
            Frame::function("[unknown]").with_module("libc.so.6")
        );
        assert_eq!(
            frames[1],
            Frame::function("thread_run").with_module("libpython3.11.so.1.0")
        );
        assert_eq!(frames[2].line, Some(11));
    }

    #[test]
    fn odd_names_survive_and_broken_lines_are_counted() {
        let (stacks, malformed) = parse(
            "f (pkg/mod.py:3);<lambda> (pkg/mod.py:9);bare 4\n\
             truncated line without count\n\
             f (a.py:1) x\n\n",
        );
        assert_eq!(malformed, 2);
        let frames = &stacks[0].frames;
        assert_eq!(frames[0].module, "pkg.mod");
        assert_eq!(frames[1].function, "<lambda>");
        assert_eq!(frames[2], Frame::function("bare"));
        assert_eq!(
            parse_frame("g (x.pyx:abc)"),
            Frame::function("g").with_module("x.pyx:abc")
        );
    }

    #[test]
    fn summary_gives_samples_and_errors() {
        let stderr = "py-spy> Sampling process 100 times a second for 1 seconds.\n\
                      py-spy> Wrote raw flamegraph data to '/tmp/o.txt'. Samples: 101 Errors: 2\n\
                      py-spy> You can use the flamegraph.pl script\n";
        assert_eq!(parse_summary(stderr), Some((101, 2)));
        assert_eq!(parse_summary("Error: Failed to find python version"), None);
    }
}
