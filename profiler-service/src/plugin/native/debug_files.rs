//! Where the full symbol table of a stripped module is, as perf and gdb
//! look for it.
//!
//! Distributions strip `.symtab` from their libraries, and with it every
//! local function: glibc's `start_thread`, `clone3` and
//! `__libc_start_call_main`, at the root of every thread's stack, are local.
//! On Debian they come back with the `-dbg`/`-dbgsym` packages (libc6-dbg),
//! which install a separate debug file holding the full `.symtab`, found by
//! the module's build id (`/usr/lib/debug/.build-id/93/ac61….debug`) or by
//! the name in its `.gnu_debuglink` section. Fedora and its descendants
//! instead embed an xz-compressed ELF file holding the local function
//! symbols in the module itself (`.gnu_debugdata`, "MiniDebugInfo").
//!
//! A debug file is only used when it belongs to the module: same build id,
//! or, for a module without one, the CRC32 its debug link states.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ReadCache};

/// The directory debug packages install into.
pub const DEBUG_DIR: &str = "/usr/lib/debug";

/// The most a `.gnu_debugdata` section may decompress to: MiniDebugInfo is
/// a symbol table of a few megabytes at most, and a crafted one in a
/// container must not exhaust the agent's memory.
pub const MAX_MINI_DEBUG_INFO: usize = 64 << 20;

/// What ties a module to its separate debug file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DebugLink {
    pub build_id: Option<Vec<u8>>,
    /// The `.gnu_debuglink` file name and the CRC32 of that file.
    pub debuglink: Option<(String, u32)>,
}

impl DebugLink {
    /// Reads a module's build id and debug link.
    pub fn of<'data, R: object::ReadRef<'data>>(file: &object::File<'data, R>) -> Self {
        DebugLink {
            build_id: file.build_id().ok().flatten().map(<[u8]>::to_vec),
            debuglink: file
                .gnu_debuglink()
                .ok()
                .flatten()
                .and_then(|(name, crc)| Some((std::str::from_utf8(name).ok()?.to_owned(), crc))),
        }
    }

    /// The paths the debug file may have, most specific first, relative
    /// to a file system root: by build id, then by debug link next to the
    /// module, in its `.debug` directory, and under [`DEBUG_DIR`].
    pub fn candidates(&self, module_path: &Path) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        if let Some(id) = self.build_id.as_deref().filter(|id| id.len() >= 2) {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            paths.push(
                Path::new(DEBUG_DIR)
                    .join(".build-id")
                    .join(&hex[..2])
                    .join(format!("{}.debug", &hex[2..])),
            );
        }
        if let (Some((name, _)), Some(dir)) = (&self.debuglink, module_path.parent()) {
            // A name with a path in it could point anywhere.
            if !name.contains('/') {
                paths.push(dir.join(name));
                paths.push(dir.join(".debug").join(name));
                let relative = dir.strip_prefix("/").unwrap_or(dir);
                paths.push(Path::new(DEBUG_DIR).join(relative).join(name));
            }
        }
        paths
    }

    /// Whether `candidate` is this module's debug file and not the module
    /// itself (a debug link may name the module's own file).
    fn accepts(&self, candidate: &ReadCache<File>) -> bool {
        let Ok(file) = object::File::parse(candidate) else {
            return false;
        };
        if let Some(id) = &self.build_id {
            return file.build_id().ok().flatten() == Some(id.as_slice())
                && file.section_by_name(".symtab").is_some();
        }
        let Some((_, crc)) = self.debuglink else {
            return false;
        };
        drop(file);
        file_crc32(candidate).is_some_and(|c| c == crc)
    }

    /// Opens `path` if it is this module's debug file (one a debuginfod
    /// server sent, say).
    pub fn open_file(&self, path: &Path) -> Option<ReadCache<File>> {
        let cache = ReadCache::new(open_regular(path)?);
        self.accepts(&cache).then_some(cache)
    }

    /// Opens the module's debug file, searched under each root in turn (a
    /// container's root, then the host's: a build id names the same file
    /// everywhere).
    pub fn open(&self, module_path: &Path, roots: &[PathBuf]) -> Option<ReadCache<File>> {
        for path in self.candidates(module_path) {
            for root in roots {
                let full = root.join(path.strip_prefix("/").unwrap_or(&path));
                let Some(file) = open_regular(&full) else {
                    continue;
                };
                let cache = ReadCache::new(file);
                if self.accepts(&cache) {
                    return Some(cache);
                }
            }
        }
        None
    }
}

/// Opens a regular file only. Paths under a container's root are the
/// container's to choose, and a symbolic link there to a FIFO or a device
/// must not block or feed the agent: opened without blocking, anything
/// but a regular file is refused.
fn open_regular(path: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The CRC32 of a whole file, as `.gnu_debuglink` states it.
fn file_crc32(file: &ReadCache<File>) -> Option<u32> {
    let len = object::ReadRef::len(file).ok()?;
    let mut hasher = crc32fast::Hasher::new();
    let mut offset = 0;
    while offset < len {
        let chunk = (len - offset).min(1 << 20);
        hasher.update(object::ReadRef::read_bytes_at(file, offset, chunk).ok()?);
        offset += chunk;
    }
    Some(hasher.finalize())
}

/// The ELF image a module's `.gnu_debugdata` section compresses, if it has
/// one and it decompresses within [`MAX_MINI_DEBUG_INFO`].
pub fn mini_debug_info<'data, R: object::ReadRef<'data>>(
    file: &object::File<'data, R>,
) -> Option<Vec<u8>> {
    let compressed = file.section_by_name(".gnu_debugdata")?.data().ok()?;
    decompress_xz(compressed, MAX_MINI_DEBUG_INFO)
}

/// Decompresses xz data, giving up past `limit` bytes.
pub fn decompress_xz(compressed: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = CappedWriter {
        bytes: Vec::new(),
        limit,
    };
    lzma_rs::xz_decompress(&mut io::BufReader::new(compressed), &mut out).ok()?;
    Some(out.bytes)
}

/// A `Vec` writer that fails once it would pass its limit.
struct CappedWriter {
    bytes: Vec<u8>,
    limit: usize,
}

impl Write for CappedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len() + buf.len() > self.limit {
            return Err(io::Error::other("decompressed data over the limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_follow_build_id_then_debug_link() {
        let link = DebugLink {
            build_id: Some(vec![0x93, 0xac, 0x61, 0xec]),
            debuglink: Some(("libfoo.so.debug".into(), 7)),
        };
        let paths = link.candidates(Path::new("/usr/lib/x86_64-linux-gnu/libfoo.so.1"));
        let expected: Vec<PathBuf> = [
            "/usr/lib/debug/.build-id/93/ac61ec.debug",
            "/usr/lib/x86_64-linux-gnu/libfoo.so.debug",
            "/usr/lib/x86_64-linux-gnu/.debug/libfoo.so.debug",
            "/usr/lib/debug/usr/lib/x86_64-linux-gnu/libfoo.so.debug",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(paths, expected);

        let escaping = DebugLink {
            build_id: None,
            debuglink: Some(("../../etc/x".into(), 0)),
        };
        assert!(escaping.candidates(Path::new("/lib/a.so")).is_empty());
    }

    #[test]
    fn xz_round_trips_and_respects_its_limit() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut compressed = Vec::new();
        lzma_rs::xz_compress(&mut data.as_slice(), &mut compressed).unwrap();
        assert_eq!(decompress_xz(&compressed, data.len()), Some(data.clone()));
        assert_eq!(decompress_xz(&compressed, data.len() - 1), None);
        assert_eq!(decompress_xz(b"not xz", 1 << 20), None);
    }
}
