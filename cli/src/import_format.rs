//! `odpctl import` without `--format`: the file's format told from what it
//! starts with, else from its name. gzip (`1f 8b`) is pprof's usual
//! wrapping, `FLR\0` opens every JFR chunk, a speedscope file is JSON
//! naming its `$schema`, a raw pprof profile is a protobuf message whose
//! first field is a sample type; text whose lines read `a;b;c N` is
//! folded stacks.

use std::path::Path;

/// The formats the API imports (`POST /api/v1/profiles/import?format=`).
pub(crate) const FORMATS: [&str; 4] = ["pprof", "folded", "jfr", "speedscope"];

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const JFR_MAGIC: &[u8] = b"FLR\0";

/// The format of `bytes`, read from `path`, or why it cannot be told.
pub(crate) fn guess(path: &Path, bytes: &[u8]) -> Result<&'static str, String> {
    if let Some(format) = by_content(bytes) {
        return Ok(format);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if let Some(format) = by_name(&name) {
        return Ok(format);
    }
    Err(format!(
        "cannot tell the format of {}: it is no gzip, JFR, speedscope or pprof file and \
         its lines do not read `frame;frame;frame COUNT`; give --format ({})",
        path.display(),
        FORMATS.join(", ")
    ))
}

/// What the first bytes say, when they say something.
fn by_content(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(GZIP_MAGIC) {
        return Some("pprof");
    }
    if bytes.starts_with(JFR_MAGIC) {
        return Some("jfr");
    }
    if is_speedscope(bytes) {
        return Some("speedscope");
    }
    if is_pprof_message(bytes) {
        return Some("pprof");
    }
    if is_folded(bytes) {
        return Some("folded");
    }
    None
}

/// What the name says: `.pb`, `.pb.gz`, `.pprof` are pprof, `.jfr` JFR.
/// A `.json` or text file is only taken for what its content shows.
fn by_name(name: &str) -> Option<&'static str> {
    const PPROF: [&str; 4] = [".pb", ".pb.gz", ".pprof", ".pprof.gz"];
    if PPROF.iter().any(|ext| name.ends_with(ext)) {
        return Some("pprof");
    }
    if name.ends_with(".jfr") {
        return Some("jfr");
    }
    None
}

/// JSON whose `$schema` is speedscope's file format schema.
fn is_speedscope(bytes: &[u8]) -> bool {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    if bytes.get(start) != Some(&b'{') {
        return false;
    }
    // The schema key comes first in the files speedscope and ODP write;
    // any order is accepted by reading the whole document.
    let head = &bytes[..bytes.len().min(4096)];
    let head = String::from_utf8_lossy(head);
    if head.contains("\"$schema\"") && head.contains("speedscope") {
        return true;
    }
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|json| {
        json["$schema"]
            .as_str()
            .is_some_and(|schema| schema.contains("speedscope"))
    })
}

/// A protobuf `Profile` message as pprof writes it: field 1 (`sample_type`,
/// length-delimited, tag `0x0a`) first, holding a `ValueType` that starts
/// with its field 1 (`type`, a varint, tag `0x08`).
fn is_pprof_message(bytes: &[u8]) -> bool {
    let [0x0a, rest @ ..] = bytes else {
        return false;
    };
    let Some((length, used)) = varint(rest) else {
        return false;
    };
    let body = &rest[used..];
    length > 0 && (length as usize) <= body.len() && body.first() == Some(&0x08)
}

/// A protobuf varint at the start of `bytes`: its value and length.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Text whose first lines are `frame;frame;frame COUNT` (a stack may be a
/// single frame).
fn is_folded(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let Ok(text) = std::str::from_utf8(head).or_else(|e| {
        // A cut inside a character at the end of the head is no reason to
        // refuse.
        std::str::from_utf8(&head[..e.valid_up_to()])
    }) else {
        return false;
    };
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .take(20)
        .peekable();
    if lines.peek().is_none() {
        return false;
    }
    // The last line of the head may be cut short; the others must all be
    // stacks.
    let lines: Vec<&str> = lines.collect();
    let whole = if head.len() < bytes.len() && lines.len() > 1 {
        &lines[..lines.len() - 1]
    } else {
        &lines[..]
    };
    whole.iter().all(|line| {
        line.rsplit_once(' ').is_some_and(|(stack, n)| {
            !stack.trim().is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../core/tests/fixtures");

    fn read(path: &str) -> Vec<u8> {
        std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn guessed(name: &str, bytes: &[u8]) -> Result<&'static str, String> {
        guess(Path::new(name), bytes)
    }

    #[test]
    fn a_gzipped_pprof_file_is_pprof_whatever_its_name() {
        let bytes = read(&format!("{CORE_FIXTURES}/go-cpu.pb.gz"));
        assert_eq!(guessed("go-cpu.pb.gz", &bytes), Ok("pprof"));
        assert_eq!(guessed("cpu.out", &bytes), Ok("pprof"));
    }

    #[test]
    fn a_raw_pprof_message_is_pprof() {
        // core/tests/fixtures/go-cpu.pb.gz decompressed.
        let raw = read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/go-cpu.pb"));
        assert_eq!(raw[..2], [0x0a, 0x04]);
        assert_eq!(guessed("cpu.out", &raw), Ok("pprof"));
        // By name, when the content does not say.
        assert_eq!(guessed("cpu.pprof", b"\x0a\x00"), Ok("pprof"));
        assert_eq!(guessed("cpu.pb", b""), Ok("pprof"));
        assert_eq!(guessed("CPU.PB.GZ", b"?"), Ok("pprof"));
    }

    /// Every profile file among odp-core's fixtures is told by its content
    /// alone, as its name says: pprof, JFR recordings (`java
    /// -XX:StartFlightRecording`), speedscope files (py-spy's, sampled or
    /// evented).
    #[test]
    fn the_fixture_files_are_told_by_their_content() {
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(CORE_FIXTURES).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let want = if name.ends_with(".pb.gz") || name.ends_with(".pprof") {
                "pprof"
            } else if name.ends_with(".jfr") {
                "jfr"
            } else if name.ends_with(".json") && name.contains("speedscope") {
                "speedscope"
            } else {
                continue;
            };
            let bytes = read(&path.to_string_lossy());
            assert_eq!(guessed("upload", &bytes), Ok(want), "{name}");
            assert_eq!(guessed(&name, &bytes), Ok(want), "{name}");
            seen.push(want);
        }
        assert!(seen.contains(&"pprof"), "{seen:?}");
    }

    #[test]
    fn jfr_is_told_by_its_magic_or_its_name() {
        // The first bytes of a recording of JDK 17's `java
        // -XX:StartFlightRecording`: magic, version 2.1, chunk size.
        let chunk = b"FLR\0\x00\x02\x00\x01\x00\x00\x00\x00\x00\x03\x7b\x99";
        assert_eq!(guessed("recording", chunk), Ok("jfr"));
        assert_eq!(guessed("app.jfr", b"\x00\x01"), Ok("jfr"));
        assert!(guessed("recording", b"FLR").is_err());
    }

    #[test]
    fn speedscope_is_json_naming_its_schema() {
        let file = br#"{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[]},"profiles":[]}"#;
        assert_eq!(guessed("profile.json", file), Ok("speedscope"));
        assert_eq!(guessed("profile.txt", file), Ok("speedscope"));
        let late =
            br#"{"profiles":[],"$schema":"https://www.speedscope.app/file-format-schema.json"}"#;
        assert_eq!(guessed("p.json", late), Ok("speedscope"));
        let other = br#"{"samples": 3}"#;
        let error = guessed("other.json", other).unwrap_err();
        assert!(error.contains("give --format"), "{error}");
    }

    #[test]
    fn stack_lines_are_folded() {
        let folded = b"main;handle_request;parse_line 325\nmain;render_page 16\n<genexpr> 38\n";
        assert_eq!(guessed("stacks.txt", folded), Ok("folded"));
        assert_eq!(guessed("stacks", b"# perf\nmain;a 1\n"), Ok("folded"));
        for bad in [&b"hello world\n"[..], b"main;a\n", b"", b"main;a 1x\n"] {
            assert!(guessed("stacks.txt", bad).is_err(), "{bad:?}");
        }
    }
}
