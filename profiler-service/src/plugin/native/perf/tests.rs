use super::*;

#[test]
fn splits_kernel_and_user_parts_in_order() {
    let chain = [
        PERF_CONTEXT_KERNEL,
        0xffff_ffff_8100_0010,
        0xffff_ffff_8100_0020,
        PERF_CONTEXT_USER,
        0x40_1000,
        0x40_2000,
    ];
    let (mut k, mut u) = (Vec::new(), Vec::new());
    split_callchain(&chain, &mut k, &mut u);
    assert_eq!(k, vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
    assert_eq!(u, vec![0x40_1000, 0x40_2000]);
}

#[test]
fn drops_guest_parts_and_guesses_without_markers() {
    let guest = -2048i64 as u64;
    let chain = [
        0x40_1000,
        0xffff_ffff_8100_0010,
        guest,
        0x1234,
        PERF_CONTEXT_USER,
        0x40_2000,
    ];
    let (mut k, mut u) = (Vec::new(), Vec::new());
    split_callchain(&chain, &mut k, &mut u);
    assert_eq!(k, vec![0xffff_ffff_8100_0010]);
    assert_eq!(u, vec![0x40_1000, 0x40_2000]);
}

#[test]
fn buffers_scale_with_frequency_within_bounds() {
    assert_eq!(buffer_bytes(1), MIN_BUFFER);
    assert_eq!(buffer_bytes(99), MIN_BUFFER);
    assert_eq!(buffer_bytes(999), 64 << 10);
    assert_eq!(buffer_bytes(u32::MAX), MAX_BUFFER);
    assert!(buffer_bytes(5000).is_power_of_two());
}
