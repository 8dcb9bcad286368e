//! Handing freed heap back to the system.
//!
//! glibc keeps what a service frees in its arenas, one per thread that
//! allocated, for the next allocation. After a burst (a heavy read, a
//! fleet's evaluations) that memory stays resident though nothing uses it,
//! and a service's resident memory then says little about what it needs.

/// Returns the free pages of every arena to the system (`malloc_trim`).
/// It walks the arenas, so it is blocking work of a few milliseconds.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn return_free_memory() {
    // SAFETY: malloc_trim takes an integer and only walks glibc's own
    // arenas; the workspace denies unsafe code, so it is allowed here alone.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators hand memory back on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn return_free_memory() {}
