//! The interpreter's divergent warps run pure ops with every kind of lane mask: `eval_lanes` must
//! give each active lane exactly `eval`'s result and leave the other lanes alone, for full masks,
//! dense partial masks (computed for all lanes and blended) and sparse ones (at most 4 lanes, run
//! lane by lane).

use kir_ir::eval::{eval, eval_lanes};

const OPS: &str = "kernel @ops(%a: f32, %b: f32, %c: f32, %i: u32, %j: u32, %s: s32, %p: pred) {
entry:
  %x1 = add.f32 %a, %b
  %x2 = div.rz.f32 %a, %b
  %x3 = sin.approx.f32 %a
  %x4 = fma.rm.f32 %a, %b, %c
  %x5 = lt.u32 %i, %j
  %x6 = gt.f32 %a, %b
  %x7 = select.f32 %p, %a, %b
  %x8 = shr.s32 %s, %j
  %x9 = cvt.rni.s32.f32 %a
  %x10 = div.u32 %i, %j
  ret
}";

#[test]
fn every_mask_shape_gives_evals_result_on_active_lanes_only() {
    let k = kir_ir::parse(OPS).expect("parses").kernels.remove(0);
    let masks = [u32::MAX, 0, 1, 1 << 31, 0b1011, 0xf000_0000, 0x8000_0101, 0b1_1111, 0x0f0f_0f0f, 0x7fff_ffff];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut checked = 0;
    for inst in &k.insts {
        if !inst.op.is_pure() {
            continue;
        }
        let sig = inst.op.signature();
        for &mask in &masks {
            for _ in 0..20 {
                // Operand rows of values of each operand's type (pred 0/1).
                let rows: Vec<[u64; 32]> = sig
                    .args
                    .iter()
                    .map(|t| {
                        let m = t.and_then(|t| t.scalar()).map_or(u64::MAX, |s| s.mask());
                        std::array::from_fn(|_| next() & m)
                    })
                    .collect();
                let refs: Vec<&[u64; 32]> = rows.iter().collect();
                let sentinel = 0xdead_beef_dead_beef;
                let mut out = [sentinel; 32];
                eval_lanes(&inst.op, &refs, &mut out, mask);
                for l in 0..32 {
                    if mask >> l & 1 != 0 {
                        let args: Vec<u64> = rows.iter().map(|r| r[l]).collect();
                        assert_eq!(out[l], eval(&inst.op, &args), "{} mask {mask:#x} lane {l}", inst.op);
                    } else {
                        assert_eq!(out[l], sentinel, "{} mask {mask:#x}: inactive lane {l} written", inst.op);
                    }
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 10 * masks.len() * 20);
}
