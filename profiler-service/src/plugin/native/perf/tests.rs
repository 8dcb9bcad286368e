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
    assert_eq!(buffer_bytes(1, false), MIN_BUFFER);
    assert_eq!(buffer_bytes(99, false), MIN_BUFFER);
    assert_eq!(buffer_bytes(999, false), 64 << 10);
    assert_eq!(buffer_bytes(u32::MAX, false), MAX_BUFFER);
    assert!(buffer_bytes(5000, false).is_power_of_two());
}

#[test]
fn stack_copy_buffers_hold_100_ms_and_several_records() {
    let record = STACK_BYTES as usize + BYTES_PER_SAMPLE;
    assert!(buffer_bytes(1, true) >= 4 * record);
    // 99 Hz: ten records of 16.5 KiB round up to 256 KiB.
    assert_eq!(buffer_bytes(99, true), 256 << 10);
    assert_eq!(buffer_bytes(999, true), MAX_STACK_BUFFER);
    assert_eq!(buffer_bytes(u32::MAX, true), MAX_STACK_BUFFER);
}

#[test]
fn picks_user_registers_by_mask_rank() {
    // bp, sp, ip in bit order.
    let regs = user_regs(USER_REGS_MASK, &[0xb0, 0x5b, 0x1b]).unwrap();
    assert_eq!(
        regs,
        UserRegs {
            ip: 0x1b,
            sp: 0x5b,
            bp: 0xb0
        }
    );
    // More registers asked (ax = bit 0) shift the ranks.
    let regs = user_regs(USER_REGS_MASK | 1, &[0xa, 0xb0, 0x5b, 0x1b]).unwrap();
    assert_eq!(regs.ip, 0x1b);
    assert_eq!(regs.bp, 0xb0);
    assert_eq!(user_regs(USER_REGS_MASK, &[1, 2]), None, "truncated");
    assert_eq!(user_regs(1 << REG_IP, &[1]), None, "no sp");
}
