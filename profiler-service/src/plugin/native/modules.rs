//! The executable mappings of a process and the unwind sections of the ELF
//! files behind them, as framehop modules.
//!
//! Only what DWARF CFI unwinding reads is loaded: `.eh_frame`,
//! `.eh_frame_hdr` (or `.debug_frame`), and the addresses of `.text` and
//! `.got` that pointer encodings are relative to. Sections are read through
//! a read cache, never the whole file, since a library can be hundreds of
//! megabytes of code the unwinder never looks at.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

use framehop::{ExplicitModuleSectionInfo, Module};
use object::{Object, ObjectSection, ObjectSegment, ReadCache, ReadRef, SegmentFlags};

use crate::targets::ProcFs;

/// Section bytes shared between the processes that map the same file.
pub type SectionData = Arc<[u8]>;

/// One executable mapping of `/proc/PID/maps`, anonymous ones (JIT code)
/// included, with the file offset needed to place the file's addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExecMapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    /// The path or pseudo-name (`[vdso]`); empty for anonymous memory.
    pub path: String,
}

impl ExecMapping {
    /// Whether this maps a file, as opposed to anonymous memory or a
    /// kernel pseudo-mapping.
    pub fn is_file(&self) -> bool {
        self.path.starts_with('/')
    }
}

/// The executable mappings of a maps file, in address order; malformed
/// lines are skipped.
pub fn parse_exec_mappings(text: &str) -> Vec<ExecMapping> {
    text.lines()
        .filter_map(|line| {
            // address perms offset dev inode [pathname, may hold spaces]
            let mut fields = line.splitn(6, ' ');
            let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
            if perms.as_bytes().get(2) != Some(&b'x') {
                return None;
            }
            let path = fields.nth(2).unwrap_or("").trim_start();
            let (start, end) = range.split_once('-')?;
            Some(ExecMapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path: path.to_owned(),
            })
        })
        .collect()
}

/// Whether some mapping holds `addr` (mappings in address order).
pub fn covers(maps: &[ExecMapping], addr: u64) -> bool {
    find_exec_mapping(maps, addr).is_some()
}

/// The mapping holding `addr` (mappings in address order).
pub fn find_exec_mapping(maps: &[ExecMapping], addr: u64) -> Option<&ExecMapping> {
    let index = maps.partition_point(|m| m.end <= addr);
    maps.get(index).filter(|m| m.start <= addr)
}

/// A `PT_LOAD` segment: where file bytes land in the file's address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    pub vaddr: u64,
    pub offset: u64,
    pub filesz: u64,
    /// `PF_X`: the segment holds code.
    pub executable: bool,
}

/// The `PT_LOAD` segments of an object file.
pub fn load_segments<'data, R: ReadRef<'data>>(file: &object::File<'data, R>) -> Vec<LoadSegment> {
    file.segments()
        .map(|s| LoadSegment {
            vaddr: s.address(),
            offset: s.file_range().0,
            filesz: s.file_range().1,
            executable: matches!(
                s.flags(),
                SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0
            ),
        })
        .collect()
}

/// The load bias of an executable mapping of a file with these segments:
/// what is added to the file's stated addresses to get the process's. The
/// mapping's file range overlaps the code's `PT_LOAD` segment (it starts
/// at the page holding the segment's first byte), whose file offset then
/// sits at `start + (p_offset - offset)` and is stated at `p_vaddr`.
///
/// That page may also end the segment before it: lld packs segments
/// without page alignment (`R` ending at 0x375718, `R E` starting at
/// 0x375740 and stated 0x1000 higher), and ld.so maps the page once for
/// each. The executable mapping is the code segment's, so an executable
/// segment is preferred.
pub fn load_bias(segments: &[LoadSegment], mapping: &ExecMapping) -> Option<u64> {
    let file_end = mapping.offset + (mapping.end - mapping.start);
    let overlapping = || {
        segments
            .iter()
            .filter(|s| s.offset < file_end && mapping.offset < s.offset.saturating_add(s.filesz))
    };
    let segment = overlapping()
        .find(|s| s.executable)
        .or_else(|| overlapping().next())?;
    mapping
        .start
        .checked_add(segment.offset)?
        .checked_sub(mapping.offset)?
        .checked_sub(segment.vaddr)
}

/// A section's stated address range and bytes.
#[derive(Debug, Clone)]
struct Section {
    svma: Range<u64>,
    data: Option<SectionData>,
}

/// The unwind sections of one ELF file.
#[derive(Debug, Clone)]
pub struct UnwindSections {
    segments: Vec<LoadSegment>,
    text: Option<Section>,
    got: Option<Section>,
    eh_frame: Option<Section>,
    eh_frame_hdr: Option<Section>,
    debug_frame: Option<Section>,
}

impl UnwindSections {
    /// Reads the sections from ELF data; `None` when it is not an object
    /// file or has no unwind information at all.
    pub fn read<'a, R: ReadRef<'a>>(data: R) -> Option<Self> {
        let file = object::File::parse(data).ok()?;
        let section = |name: &str, with_data: bool| {
            let s = file.section_by_name(name)?;
            let data = if with_data {
                Some(SectionData::from(s.data().ok()?))
            } else {
                None
            };
            Some(Section {
                svma: s.address()..s.address() + s.size(),
                data,
            })
        };
        let sections = UnwindSections {
            segments: load_segments(&file),
            text: section(".text", false),
            got: section(".got", false),
            eh_frame: section(".eh_frame", true),
            eh_frame_hdr: section(".eh_frame_hdr", true),
            debug_frame: section(".debug_frame", true),
        };
        (sections.eh_frame.is_some() || sections.debug_frame.is_some()).then_some(sections)
    }

    /// The load bias of a mapping of this file ([`load_bias`]).
    pub fn base_avma(&self, mapping: &ExecMapping) -> Option<u64> {
        load_bias(&self.segments, mapping)
    }

    /// The framehop module for one mapping of this file.
    pub fn module(&self, mapping: &ExecMapping) -> Option<Module<SectionData>> {
        let range = |s: &Option<Section>| s.as_ref().map(|s| s.svma.clone());
        let data = |s: &Option<Section>| s.as_ref().and_then(|s| s.data.clone());
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: range(&self.text),
            got_svma: range(&self.got),
            eh_frame_svma: range(&self.eh_frame),
            eh_frame: data(&self.eh_frame),
            eh_frame_hdr_svma: range(&self.eh_frame_hdr),
            eh_frame_hdr: data(&self.eh_frame_hdr),
            debug_frame: data(&self.debug_frame),
            ..ExplicitModuleSectionInfo::default()
        };
        Some(Module::new(
            mapping.path.clone(),
            mapping.start..mapping.end,
            self.base_avma(mapping)?,
            info,
        ))
    }
}

/// What identifies a file's content well enough to share its sections
/// between processes: device, inode, size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileKey {
    dev: u64,
    inode: u64,
    len: u64,
    mtime_ns: i128,
}

impl FileKey {
    pub fn of(meta: &fs::Metadata) -> Self {
        FileKey {
            dev: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// An opened module file with its identity.
pub struct ModuleFile {
    pub key: FileKey,
    file: File,
}

impl ModuleFile {
    /// Opens the file behind a mapping as the process sees it: through its
    /// root first (containers), then through `map_files`, which also
    /// reaches files deleted since they were mapped.
    pub fn open(procfs: &ProcFs, pid: u32, mapping: &ExecMapping) -> io::Result<Self> {
        let map_file = procfs.proc_file(
            pid,
            &format!("map_files/{:x}-{:x}", mapping.start, mapping.end),
        );
        let mut candidates = Vec::with_capacity(2);
        if !mapping.path.ends_with(" (deleted)") {
            candidates.push(procfs.in_root(pid, std::path::Path::new(&mapping.path)));
        }
        candidates.push(map_file);
        let mut last = io::Error::from(io::ErrorKind::NotFound);
        for path in candidates {
            match File::open(&path) {
                Ok(file) => {
                    let key = FileKey::of(&file.metadata()?);
                    return Ok(ModuleFile { key, file });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Opens the file a process that may have exited mapped, by the path
    /// its `MMAP2` record gave, in the agent's own root (as `perf report`
    /// does): only when its build id is the recorded one, if one was.
    pub fn open_recorded(path: &str, build_id: Option<&[u8]>) -> io::Result<Self> {
        let file = File::open(path)?;
        let key = FileKey::of(&file.metadata()?);
        let opened = ModuleFile { key, file };
        match build_id {
            Some(wanted) if opened.build_id().as_deref() != Some(wanted) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "the file at that path has another build id",
            )),
            _ => Ok(opened),
        }
    }

    /// The file's GNU build id, if it has one.
    pub fn build_id(&self) -> Option<Vec<u8>> {
        let cache = ReadCache::new(&self.file);
        let elf = object::File::parse(&cache).ok()?;
        Some(elf.build_id().ok()??.to_vec())
    }

    /// Reads the file's unwind sections.
    pub fn sections(self) -> Option<UnwindSections> {
        let cache = ReadCache::new(self.file);
        UnwindSections::read(&cache)
    }

    /// The opened file, for readers of other parts of it.
    pub fn into_file(self) -> File {
        self.file
    }
}

/// Reads the `[vdso]` image out of the process's memory: it is in no file,
/// and clock_gettime() and friends spend their time there.
pub fn read_vdso_image(procfs: &ProcFs, pid: u32, mapping: &ExecMapping) -> Option<Vec<u8>> {
    let len = usize::try_from(mapping.end - mapping.start).ok()?;
    let mut mem = fs::File::open(procfs.proc_file(pid, "mem")).ok()?;
    mem.seek(SeekFrom::Start(mapping.start)).ok()?;
    let mut image = vec![0; len];
    mem.read_exact(&mut image).ok()?;
    Some(image)
}

/// The unwind sections of the `[vdso]` image ([`read_vdso_image`]).
pub fn read_vdso(procfs: &ProcFs, pid: u32, mapping: &ExecMapping) -> Option<UnwindSections> {
    UnwindSections::read(read_vdso_image(procfs, pid, mapping)?.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/prog
55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/prog
7f1e2c000000-7f1e2c001000 rwxp 00000000 00:00 0
7f1e2c200000-7f1e2c228000 r--p 00000000 08:01 99 /usr/lib/libc.so.6
7f1e2c228000-7f1e2c3bd000 r-xp 00028000 08:01 99 /usr/lib/libc.so.6
garbage line
7f1e2c400000-zz r-xp 00000000 08:01 99 /bad
7ffd5e1f0000-7ffd5e1f2000 r-xp 00000000 00:00 0 [vdso]
";

    #[test]
    fn keeps_executable_mappings_with_offsets() {
        let maps = parse_exec_mappings(MAPS);
        let summary: Vec<(u64, u64, &str)> = maps
            .iter()
            .map(|m| (m.start, m.offset, m.path.as_str()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (0x55d0_c0a0_1000, 0x1000, "/usr/bin/prog"),
                (0x7f1e_2c00_0000, 0, ""),
                (0x7f1e_2c22_8000, 0x28000, "/usr/lib/libc.so.6"),
                (0x7ffd_5e1f_0000, 0, "[vdso]"),
            ]
        );
        assert!(maps[0].is_file() && !maps[1].is_file() && !maps[3].is_file());
    }

    #[test]
    fn looks_up_module_ranges() {
        let maps = parse_exec_mappings(MAPS);
        assert!(!covers(&maps, 0x55d0_c0a0_0fff), "read-only part");
        assert!(covers(&maps, 0x55d0_c0a0_1000));
        assert!(covers(&maps, 0x55d0_c0a0_1fff));
        assert!(!covers(&maps, 0x55d0_c0a0_2000));
        assert!(covers(&maps, 0x7f1e_2c00_0010), "anonymous JIT page");
        assert!(covers(&maps, 0x7f1e_2c3b_cfff));
        assert!(!covers(&maps, 0x7f1e_2c3b_d000));
        assert!(!covers(&maps, 0));
        assert!(!covers(&maps, u64::MAX));
    }

    #[test]
    fn places_a_mapping_by_its_load_segment() {
        let sections = UnwindSections {
            segments: vec![
                LoadSegment {
                    vaddr: 0,
                    offset: 0,
                    filesz: 0x1000,
                    executable: false,
                },
                LoadSegment {
                    vaddr: 0x401234,
                    offset: 0x1234,
                    filesz: 0x5000,
                    executable: true,
                },
            ],
            text: None,
            got: None,
            eh_frame: None,
            eh_frame_hdr: None,
            debug_frame: None,
        };
        let mapping = ExecMapping {
            start: 0x7f00_0000_1000,
            end: 0x7f00_0000_7000,
            offset: 0x1000,
            path: "/lib/x.so".into(),
        };
        // The page holding vaddr 0x401234 is mapped at start, so file
        // address 0x401000 sits at start.
        assert_eq!(
            sections.base_avma(&mapping),
            Some(0x7f00_0000_1000 - 0x401000)
        );
        let outside = ExecMapping {
            offset: 0x9000,
            ..mapping.clone()
        };
        assert_eq!(sections.base_avma(&outside), None);
    }

    #[test]
    fn places_code_that_shares_a_page_with_the_segment_before_it() {
        // The layout rust-lld gave this crate's test binary: the read-only
        // segment ends inside the page where the code segment starts.
        let segments = [
            LoadSegment {
                vaddr: 0,
                offset: 0,
                filesz: 0x375718,
                executable: false,
            },
            LoadSegment {
                vaddr: 0x376740,
                offset: 0x375740,
                filesz: 0x7a4c50,
                executable: true,
            },
        ];
        let base = 0x5555_0000_0000;
        // ld.so maps the code from the page holding its first byte.
        let code = ExecMapping {
            start: base + 0x376000,
            end: base + 0x376000 + 0x7a5000,
            offset: 0x375000,
            path: "/bin/rust-program".into(),
        };
        assert_eq!(load_bias(&segments, &code), Some(base));
    }

    #[test]
    fn reads_the_unwind_sections_of_a_real_library() {
        let maps = parse_exec_mappings(&fs::read_to_string("/proc/self/maps").unwrap());
        let exe = std::env::current_exe().unwrap();
        let mapping = maps
            .iter()
            .find(|m| std::path::Path::new(&m.path) == exe)
            .expect("the test binary's code is mapped");
        let procfs = ProcFs::default();
        let file = ModuleFile::open(&procfs, std::process::id(), mapping).unwrap();
        let sections = file.sections().expect("Rust binaries carry .eh_frame");
        assert!(sections.eh_frame_hdr.is_some());
        // Our own function must fall inside the module once placed.
        let module = sections.module(mapping).unwrap();
        let here = reads_the_unwind_sections_of_a_real_library as *const () as u64;
        assert!(module.avma_range().contains(&here));
        assert!(module.base_avma() <= mapping.start);
    }
}
