//! Models of the H100's multi-function unit (MUFU) for `rcp rsqrt sqrt ex2 .approx.f32`, learned
//! from the hardware's own outputs (hardware-truth `approx/mufu_binades.npz`: the GPU's result for
//! every input of whole binades) and written independently of kir's interpreter.
//!
//! Guarantees:
//! - Each model is table-driven quadratic interpolation, the published shape of NVIDIA's SFU: the
//!   top 7 mantissa bits of the reduced argument pick a segment, the low 16 bits `t` give
//!   `u = t / 2^16`, and the result's significand is `floor(c0 + u * (c1 + u * c2))` (f64
//!   arithmetic, this exact expression) in units of the result binade's ulp. The 128 `[c0, c1, c2]`
//!   per table are a minimax (linear programming) fit to the hardware's outputs, NOT the
//!   hardware's own fixed-point constants and datapath: the models are not bit-exact.
//! - Exactness on the measured binades (exhaustive there, 2^23 inputs each; correctly rounded f32
//!   in brackets): `rcp` [1,2) 98.93% (86.79%); `rsqrt` [1,2) 98.17% (77.55%), [2,4) 98.70%
//!   (79.13%); `sqrt` [1,2) 99.57% (83.31%), [2,4) 99.41% (82.95%); `ex2` [1,2) 98.07% (61.11%).
//!   The tables cover one period of each function (rcp: any binade; rsqrt/sqrt: an even and an
//!   odd exponent), so for normal inputs with normal results these rates carry over to all 2^32
//!   inputs. `ex2` reduces `x` to fixed point as the hardware does (see [`ex2`]), which the
//!   other measured binades confirm: [0.5, 1) 97.75% (68.58%), [-1, -0.5) 98.38% (69.52%).
//! - Every model result is kept only if it lies within the op's measured maximum distance from
//!   the correctly rounded result (`max_ulp`: rcp 1, sqrt 1, rsqrt 2, ex2 2); the caller falls back
//!   to the correctly rounded result otherwise, so the emulator never strays further from the
//!   exact function than the GPU was measured to.
//! - Special inputs (NaN, infinities, zeros, and subnormals where the op or `.ftz` flushes them)
//!   are left to the caller: the models return `None` for them.

/// Which function a table models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fun {
    Rcp,
    Rsqrt,
    Sqrt,
    Ex2,
}

/// The measured maximum distance (ulp) of the H100's result from the correctly rounded one,
/// over all 2^32 inputs (`approx/mufu.json`).
pub fn max_ulp(f: Fun) -> u32 {
    match f {
        Fun::Rcp | Fun::Sqrt => 1,
        Fun::Rsqrt | Fun::Ex2 => 2,
    }
}

/// Evaluates one table at a 23-bit fraction `m`: the result's significand in units of its ulp.
#[inline]
fn interp(tab: &[[u64; 3]; 128], m: u32) -> f64 {
    let c = &tab[(m >> 16) as usize & 127];
    let u = (m & 0xffff) as f64 / 65536.0;
    let (c0, c1, c2) = (f64::from_bits(c[0]), f64::from_bits(c[1]), f64::from_bits(c[2]));
    (c0 + u * (c1 + u * c2)).floor()
}

/// A finite nonzero f32's (unbiased exponent, 23-bit fraction), subnormals normalised.
#[inline]
fn split(x: u32) -> (i32, u32) {
    let e = ((x >> 23) & 0xff) as i32;
    let m = x & 0x7f_ffff;
    if e != 0 {
        return (e - 127, m);
    }
    let sh = m.leading_zeros() - 8; // brings the leading 1 to bit 23
    (-126 - sh as i32, (m << sh) & 0x7f_ffff)
}

/// `v` (exactly representable in f64) rounded to nearest f32 bits, flushed if `ftz` and
/// subnormal.
#[inline]
fn to_f32(v: f64, ftz: bool) -> u32 {
    let b = (v as f32).to_bits();
    if ftz && b & 0x7f80_0000 == 0 {
        b & 0x8000_0000
    } else {
        b
    }
}

#[inline]
fn usable(x: u32, ftz: bool) -> bool {
    let a = x & 0x7fff_ffff;
    a != 0 && a < 0x7f80_0000 && !(ftz && a < 0x0080_0000)
}

/// `rcp.approx{.ftz}.f32` of a finite nonzero `x` (bits); `None` for specials (and, with `.ftz`,
/// subnormal inputs).
pub fn rcp(x: u32, ftz: bool) -> Option<u32> {
    if !usable(x, ftz) {
        return None;
    }
    let (e, m) = split(x);
    let y = if m == 0 { 16_777_216.0 } else { interp(&RCP, m) };
    let v = y * 2f64.powi(-24 - e);
    Some(to_f32(v, ftz) | (x & 0x8000_0000))
}

/// `rsqrt.approx{.ftz}.f32` of a positive finite `x`; `None` for specials and negatives.
pub fn rsqrt(x: u32, ftz: bool) -> Option<u32> {
    if !usable(x, ftz) || x >> 31 != 0 {
        return None;
    }
    let (e, m) = split(x);
    let (tab, k) = if e & 1 == 0 { (&RSQRT_1_2, e) } else { (&RSQRT_2_4, e - 1) };
    let y = if m == 0 && e & 1 == 0 { 16_777_216.0 } else { interp(tab, m) };
    Some(to_f32(y * 2f64.powi(-24 - k / 2), ftz))
}

/// `sqrt.approx{.ftz}.f32` of a positive finite `x`; `None` for specials and negatives.
pub fn sqrt(x: u32, ftz: bool) -> Option<u32> {
    if !usable(x, ftz) || x >> 31 != 0 {
        return None;
    }
    let (e, m) = split(x);
    let (tab, k) = if e & 1 == 0 { (&SQRT_1_2, e) } else { (&SQRT_2_4, e - 1) };
    let y = if m == 0 && e & 1 == 0 { 8_388_608.0 } else { interp(tab, m) };
    Some(to_f32(y * 2f64.powi(-23 + k / 2), ftz))
}

/// `ex2.approx{.ftz}.f32` of a finite `x` with |x| < 128; `None` otherwise (zero included: exact).
///
/// The argument is reduced as the hardware does (measured on [0.5, 1) and [-1, -0.5)): `|x|` is
/// truncated to fixed point with 23 fraction bits; for `x >= 0` its integer and fraction are `i`
/// and `f`; for `x < 0` with a nonzero fraction, `i = -int - 1` and `f` is the ONE's complement
/// of the fraction (`2^23 - 1 - frac`, not `2^23 - frac`), a zero fraction gives `f = 0`.
/// The result is `2^i * table(f)`.
pub fn ex2(x: u32, ftz: bool) -> Option<u32> {
    if !usable(x, ftz) {
        return None;
    }
    let ax = f32::from_bits(x & 0x7fff_ffff) as f64;
    if ax >= 128.0 {
        return None;
    }
    let a = (ax * 8_388_608.0) as u64; // truncated: |x| * 2^23 < 2^30
    let (int, frac) = ((a >> 23) as i32, (a & 0x7f_ffff) as u32);
    let (i, f) = if x >> 31 == 0 {
        (int, frac)
    } else if frac == 0 {
        (-int, 0)
    } else {
        (-int - 1, 0x7f_ffff - frac)
    };
    let y = if f == 0 { 8_388_608.0 } else { interp(&EX2, f) };
    Some(to_f32(y * 2f64.powi(i - 23), ftz))
}

/// The model of `f`, if it applies to `x`.
pub fn model(f: Fun, ftz: bool, x: u32) -> Option<u32> {
    match f {
        Fun::Rcp => rcp(x, ftz),
        Fun::Rsqrt => rsqrt(x, ftz),
        Fun::Sqrt => sqrt(x, ftz),
        Fun::Ex2 => ex2(x, ftz),
    }
}

/// How many f32 values lie between `a` and `b` (+0 and -0 count as one); both must be non-NaN.
pub fn ulp_distance(a: u32, b: u32) -> u64 {
    let ord = |v: u32| if v >> 31 != 0 { -((v & 0x7fff_ffff) as i64) } else { v as i64 };
    (ord(a) - ord(b)).unsigned_abs()
}

/// The model of `f` at `x` if it is within [`max_ulp`] of `rounded` (the correctly rounded
/// result, bits); `rounded` otherwise.
pub fn approx_or(f: Fun, ftz: bool, x: u32, rounded: u32) -> u32 {
    if rounded & 0x7fff_ffff > 0x7f80_0000 {
        return rounded;
    }
    match model(f, ftz, x) {
        Some(m) if ulp_distance(m, rounded) <= max_ulp(f) as u64 => m,
        _ => rounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, the H100's result) pairs from hardware-truth approx/mufu_binades.npz where the
    /// GPU's bits differ from the correctly rounded result, and from mufu.json's worst cases.
    #[test]
    fn models_reproduce_measured_bits() {
        let cases: &[(Fun, &[(u32, u32)])] = &[
            (
                Fun::Rcp,
                &[
                    (0x3fb6_f620, 0x3f33_190e),
                    (0x3fbb_441e, 0x3f2e_fb20),
                    (0x3fdd_e164, 0x3f13_aee2),
                    (0x3ff9_6fa9, 0x3f03_5e48),
                    (0x0080_05a9, 0x7e7f_f4ae),
                ],
            ),
            (
                Fun::Rsqrt,
                &[
                    (0x3f95_34b7, 0x3f6d_1c72),
                    (0x3f9c_cd0f, 0x3f67_4c1b),
                    (0x3fee_3d30, 0x3f3b_a549),
                    (0x3ff7_ca3c, 0x3f37_fe66),
                    (0x4018_77b9, 0x3f25_dc1b),
                    (0x402e_70ce, 0x3f1b_0ff1),
                    (0x403e_71a7, 0x3f14_677e),
                    (0x404e_037c, 0x3f0e_afac),
                ],
            ),
            (
                Fun::Sqrt,
                &[
                    (0x3fc3_03c8, 0x3f9d_fe4a),
                    (0x3fe1_183f, 0x3fa9_bdc8),
                    (0x3fe8_8bae, 0x3fac_871d),
                    (0x3fea_42da, 0x3fad_29ba),
                    (0x400f_9bb0, 0x3fbf_bd15),
                    (0x400f_a6fd, 0x3fbf_c4a0),
                    (0x4028_41b2, 0x3fcf_8ac2),
                    (0x403a_e36e, 0x3fda_bb3d),
                ],
            ),
            (
                Fun::Ex2,
                &[
                    (0x3f9a_f2d0, 0x4014_1c6c),
                    (0x3fb6_272e, 0x402b_9ea0),
                    (0x3fc2_d46d, 0x4037_d08c),
                    (0x3ff3_772c, 0x406f_333c),
                    (0x3f06_be2a, 0x3fb8_5ac4),
                    (0x3f25_d24f, 0x3fc8_8a07),
                    (0x3f41_b56b, 0x3fd8_4488),
                    (0x3f43_7bec, 0x3fd9_4f52),
                    (0xbf07_67ac, 0x3f31_6d13),
                    (0xbf1d_fee0, 0x3f26_e616),
                    (0xbf55_5eb2, 0x3f0f_a931),
                    (0xbf7a_3ef8, 0x3f02_0282),
                    // the reduction: |x| below 2^-23 is 0 in fixed point; -2^-23 has fraction 2^23 - 2
                    (0xb380_0000, 0x3f80_0000),
                    (0xb400_0000, 0x3f7f_fffe),
                    (0xbf80_0000, 0x3f00_0000),
                ],
            ),
        ];
        let mut bad = vec![];
        for (f, v) in cases {
            for &(x, hw) in v.iter() {
                for ftz in [false, true] {
                    let got = model(*f, ftz, x);
                    if got != Some(hw) {
                        bad.push(format!("{f:?} ftz={ftz} x={x:#010x}: model {got:x?}, H100 {hw:#010x}"));
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn exact_points_and_specials() {
        assert_eq!(rcp(0x3f80_0000, false), Some(0x3f80_0000)); // 1/1
        assert_eq!(rcp(0xc080_0000, false), Some(0xbe80_0000)); // 1/-4
        assert_eq!(rsqrt(0x4080_0000, false), Some(0x3f00_0000)); // 1/sqrt(4)
        assert_eq!(sqrt(0x4080_0000, false), Some(0x4000_0000));
        assert_eq!(ex2(0x4000_0000, false), Some(0x4080_0000)); // 2^2
        assert_eq!(ex2(0xc000_0000, false), Some(0x3e80_0000)); // 2^-2
        for x in [0, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7fc0_0000] {
            for f in [Fun::Rcp, Fun::Rsqrt, Fun::Sqrt, Fun::Ex2] {
                assert_eq!(model(f, false, x), None, "{f:?} {x:#x}");
            }
        }
        assert_eq!(rsqrt(0xbf80_0000, false), None);
        // .ftz: subnormal inputs are the caller's (flushed to zero), subnormal results flush.
        assert_eq!(rcp(0x0000_0001, true), None);
        assert_eq!(rcp(0x7f00_0000, true), Some(0));
        assert_ne!(rcp(0x7f00_0000, false), Some(0));
        // A model result further from the correctly rounded one than measured is not used.
        assert_eq!(approx_or(Fun::Rcp, false, 0x3f80_0000, 0x3f80_0005), 0x3f80_0005);
        assert_eq!(approx_or(Fun::Rcp, false, 0x3fb6_f620, 0x3f33_190f), 0x3f33_190e);
    }
}

// Generated by a fit to hardware-truth approx/mufu_binades.npz (see the module docs): the GPU's
// bits are `correctly rounded + delta` for every input of the binade; each segment's coefficients
// minimise the largest violation of `Y <= c0 + u*(c1 + u*c2) < Y + 1` over its 65,536 inputs, then
// c0 is nudged to maximise exact matches.
/// `rcp_1_2`: segment `s` = the top 7 mantissa bits; `[c0, c1, c2]` as f64 bits.
static RCP: [[u64; 3]; 128] = [
    [0x4170000000ad87be, 0xc0ffffc25fda049e, 0x408fa8ac4e6b9aef],
    [0x416fc07f118a3f3d, 0xc0ff8142cb7ccaba, 0x408ee8cdf9710a15],
    [0x416f81f830c2eb0c, 0xc0ff05a108e9cb9c, 0x408e3021083872b9],
    [0x416f4465a77e626d, 0xc0fe8cde6b17780d, 0x408d871ef492895e],
    [0x416f07c1f228de3b, 0xc0fe16c3e0fc9a47, 0x408cd94c93fb37dd],
    [0x416ecc07bfdbf6de, 0xc0fda35eb92d1117, 0x408c2f476191e862],
    [0x416e9131c03e0032, 0xc0fd329ff76f45cd, 0x408b97f0fceeeecb],
    [0x416e573ad07d8b1c, 0xc0fcc440c3977175, 0x408af864ec2ffe41],
    [0x416e1e1e20d11558, 0xc0fc5861c4726e9e, 0x408a68e69e06bb16],
    [0x416de5d6ef900ec6, 0xc0fbeeddafee0707, 0x4089d6d378ba80ba],
    [0x416dae60885a50d1, 0xc0fb879fbb8e9c24, 0x408947d707016fbf],
    [0x416d77b65842806d, 0xc0fb227f097fd712, 0x4088b76a21663668],
    [0x416d41d42859c8c6, 0xc0fabf9fc092c759, 0x40882fd204145c95],
    [0x416d0cb5a07abbce, 0xc0fa5edff741da50, 0x4087affa74241d6f],
    [0x416cd8569842bdf2, 0xc0fa001f93847b86, 0x40872fc2f55f67a8],
    [0x416ca4b310592a94, 0xc0f9a35fc057aa5e, 0x4086b7e4a94576e0],
    [0x416c71c72925bf92, 0xc0f94880bf5c1561, 0x4086382f28411613],
    [0x416c3f8f11a2dd4c, 0xc0f8ef81878f24a4, 0x4085c06c72f2432b],
    [0x416c0e07108a2fcf, 0xc0f8985f45672438, 0x40854f9d13ff65c5],
    [0x416bdd2b908c8848, 0xc0f84300190e4ccb, 0x4084e841a6215d73],
    [0x416bacf9190ab7a0, 0xc0f7ef61048ae45a, 0x408480783b3d5c5d],
    [0x416b7d6c4871bcf7, 0xc0f79d600b96008d, 0x4084101479a2a3e5],
    [0x416b4e81b8a075a5, 0xc0f74d1f709f42b6, 0x4083b79cc21e1b41],
    [0x416b203650afbd57, 0xc0f6fe6032b51ef6, 0x4083502b4ef7bce2],
    [0x416af286c8e58198, 0xc0f6b11fc0910c65, 0x4082e7c13c05530b],
    [0x416ac57031a1c94f, 0xc0f6658178914988, 0x408290670ff01c24],
    [0x416a98ef70ff922f, 0xc0f61b401282635a, 0x40822fe87ec4cbc9],
    [0x416a6d01b0f42baa, 0xc0f5d2807952a2e2, 0x4081e0418b791fa1],
    [0x416a41a430c6a2dd, 0xc0f58b1fbcacbfe5, 0x408187daa9b44cb1],
    [0x416a16d408e9a3ff, 0xc0f544ffa9bbdf13, 0x408127bcf4f45c11],
    [0x4169ec8eaa27ebee, 0xc0f5006244517874, 0x4080e0d16a2b7d2c],
    [0x4169c2d158ef66dd, 0xc0f4bce02f98db7f, 0x4080881c19b0050f],
    [0x41699999a8c974b5, 0xc0f47abf7939611c, 0x408037b4f7e57afa],
    [0x416970e50965537f, 0xc0f439e0fbea30af, 0x407fe0d1b7c3f51f],
    [0x416948b10121107d, 0xc0f3fa1ff07fdb52, 0x407f4fca9b684835],
    [0x416920fb592e26c4, 0xc0f3bb80de1761aa, 0x407ea0ec3829365b],
    [0x4168f9c198e05e99, 0xc0f37e1f8d7e041f, 0x407e1f88341395cc],
    [0x4168d301a11e98b7, 0xc0f341dff1e04538, 0x407d9fa16e913b84],
    [0x4168acb92210ceb4, 0xc0f306a186aa5c1e, 0x407d10ecf1f6dd15],
    [0x416886e608fb7fd7, 0xc0f2cc7f8ccf5327, 0x407c8f790aaef0bf],
    [0x41686186291396db, 0xc0f293600ad3e65e, 0x407c1010ab94ece0],
    [0x41683c9788c1b10a, 0xc0f25b3f3a50a6bc, 0x407b8f23da9d2a10],
    [0x4168181829161e9d, 0xc0f2242022af5729, 0x407b1011422df625],
    [0x4167f406111ddc82, 0xc0f1edffdfc7fa70, 0x407a9fcbda5d9f0a],
    [0x4167d05f512e9550, 0xc0f1b8bfd3069751, 0x407a1fce93a1dcfe],
    [0x4167ad22193fd186, 0xc0f184806b7cdd7d, 0x4079c0a0d20ad45d],
    [0x41678a4c90fa5ea3, 0xc0f150ffd5c0751b, 0x40792ff02b0418ba],
    [0x416767dcf10fd0d7, 0xc0f11e7f64ea1942, 0x4078cf470a5d1849],
    [0x416745d189e11515, 0xc0f0ece13cae51ff, 0x407860f4eb8b4928],
    [0x4167242889623f57, 0xc0f0bc004442e278, 0x4077f02bccf35baf],
    [0x416702e060e44e69, 0xc0f08bff106d1049, 0x40778eebbd919ad3],
    [0x4166e1f78131719d, 0xc0f05cdfa05bdf17, 0x40772f844d6e0fb5],
    [0x4166c16c29477459, 0xc0f02e7fe20f1472, 0x4076dfde24942770],
    [0x4166a13ce1d30ffa, 0xc0f000c151091105, 0x407660f0f2b818d7],
    [0x416681682183f8e0, 0xc0efa7c0cb276d29, 0x4076105f3ccb4bb5],
    [0x416661ec71623512, 0xc0ef4f80ae85d9ab, 0x4075c043b54ab438],
    [0x416642c869510ad4, 0xc0eef87fd21714ff, 0x40754fc75b3b279f],
    [0x416623fa9104252a, 0xc0eea33ef41b225d, 0x40750f7d83586ed4],
    [0x41660581713a3b99, 0xc0ee4f0022a91c1a, 0x4074b01dc4f5c828],
    [0x4165e75bc18d50e6, 0xc0edfc40c45d5d9e, 0x40746013bd1d0f81],
    [0x4165c98838ec07ad, 0xc0edaabda12fb1c8, 0x4073fed786e9914e],
    [0x4165ac058156415b, 0xc0ed5abfbc361b95, 0x4073bfcecb3dfd38],
    [0x41658ed2496617d1, 0xc0ed0bbfffd43ff9, 0x40735fdc79b64a43],
    [0x416571ed4975e0ba, 0xc0ecbe00291f664d, 0x40731014616ba737],
    [0x416555556158ee10, 0xc0ec71bfa15332a8, 0x4072dfd33c8665fd],
    [0x4165390961ac6110, 0xc0ec2681ebb91110, 0x407290f87f64a275],
    [0x41651d080167d11e, 0xc0ebdc40699c44fc, 0x40723031150f4a62],
    [0x416501502198b631, 0xc0eb934098b3d48d, 0x4071f0318c0848ca],
    [0x4164e5e0b9679203, 0xc0eb4b800754bbca, 0x4071b021d58e9ac4],
    [0x4164cab891989f2e, 0xc0eb04c09bc63817, 0x4071703589c6dd70],
    [0x4164afd6b1695223, 0xc0eabeffc7a61fc9, 0x40711fde42e02dd1],
    [0x41649539f9813055, 0xc0ea7a7fc48f4cb8, 0x4070efc6f9b2f594],
    [0x41647ae159592da9, 0xc0ea36c0330f35dc, 0x4070a03ce1d27b14],
    [0x416460cbda44e956, 0xc0e9f4429df7f207, 0x407070ceec07a730],
    [0x416446f87182060b, 0xc0e9b27ff91bbf78, 0x40701fe9eee3a1fb],
    [0x41642d66315adcd4, 0xc0e971feed0609bd, 0x406ffecbf7b5840a],
    [0x41641414296704ee, 0xc0e9323fb364b148, 0x406f5fb354eb092e],
    [0x4163fb0151d6e26f, 0xc0e8f38091dfb1eb, 0x406effd41a482095],
    [0x4163e22cd1aa1de0, 0xc0e8b580a28ec7fe, 0x406e602ee84a3e91],
    [0x4163c995b16dc194, 0xc0e8787fd98a75b3, 0x406dfff5ed895d5d],
    [0x4163b13b216d165a, 0xc0e83c7f82ca0f07, 0x406d9f729282eb60],
    [0x4163991c41965fab, 0xc0e801407f0e93ca, 0x406d20b99123442e],
    [0x416381382963af85, 0xc0e7c6ff258d4eaf, 0x406cdf0b5e060651],
    [0x4163698e0974cc60, 0xc0e78d3f622d62e4, 0x406c3f0478d608ff],
    [0x4163521d0984c855, 0xc0e7547fa9c42c65, 0x406bdf8e6696d6ac],
    [0x41633ae469696fbd, 0xc0e71cbf7c688d89, 0x406bbf769046a884],
    [0x416323e35986b5da, 0xc0e6e57faeff3edf, 0x406b3f94dd9cc203],
    [0x41630d19118a84c2, 0xc0e6af0038a42939, 0x406ac031a2b8cc18],
    [0x4162f684d184d221, 0xc0e6797f340c9165, 0x406a7f082c4b3930],
    [0x4162e025d995e8b6, 0xc0e6448075450a75, 0x406a009f205d094b],
    [0x4162c9fb59939a90, 0xc0e6104018a8a4ef, 0x4069a0055fac2dfb],
    [0x4162b404c18cf1dd, 0xc0e5dcffe4d70d67, 0x40697fc274acbf78],
    [0x41629e413a11e705, 0xc0e5aa0218b10899, 0x4068e16d12bc834a],
    [0x416288b021a536c4, 0xc0e5780028738a3f, 0x4068a02466a7eec5],
    [0x41627350c9ad295b, 0xc0e546c0976991c8, 0x4068809de7a61119],
    [0x41625e22819bc003, 0xc0e515ffe8ea4de9, 0x40681ffddc0ed425],
    [0x41624924a1a2edbd, 0xc0e4e5bfffb97831, 0x40679ff3fbc9d497],
    [0x41623456898d2c28, 0xc0e4b63fe1865241, 0x40673fe9693d592a],
    [0x41621fb7997f68cf, 0xc0e4877f23748f38, 0x4066ff32598d5933],
    [0x41620b4719a39db0, 0xc0e4593fac9cdf04, 0x4066bf3c874879bb],
    [0x4161f70491976fbe, 0xc0e42bbfb130d11b, 0x40667faf22c8462e],
    [0x4161e2ef49acd950, 0xc0e3fec01355614d, 0x40664012df416f6d],
    [0x4161cf06b9b1a8b2, 0xc0e3d24023de2db3, 0x4065e01f3fb57ffd],
    [0x4161bb4a522141d0, 0xc0e3a68231313774, 0x4065a1e3dbc45665],
    [0x4161a7b971a76d75, 0xc0e37b3fd896cdfd, 0x40655fd01fe1d8aa],
    [0x4161945389c2d59f, 0xc0e3508022d9f4b0, 0x40651ff28cd50dd9],
    [0x4161811821a1038b, 0xc0e3263fa3b6d080, 0x4064bf903cb2f87e],
    [0x41616e0699ea98cc, 0xc0e2fcc0ab43b5a9, 0x4064a06447013bc6],
    [0x41615b1e71a3e763, 0xc0e2d37fa166fbcc, 0x40641fac0b59f060],
    [0x4161485f219a190f, 0xc0e2aaffe86087c9, 0x4063ffbe2ac205b0],
    [0x416135c8218ee529, 0xc0e282ff54489b25, 0x4063df1bdd4f5df4],
    [0x41612358f994aae1, 0xc0e25b3faa659c13, 0x40635f8de77aebfc],
    [0x4161111121b9640c, 0xc0e234400f4d19fe, 0x40634019383209ff],
    [0x4160fef021c1ccd6, 0xc0e20dc005535063, 0x40631ff4d5beea91],
    [0x4160ecf579b3c81a, 0xc0e1e77ff5c70d89, 0x4062bff15963d24c],
    [0x4160db20c1b37c84, 0xc0e1c2001734053e, 0x4062a02bde1819c0],
    [0x4160c97161a5d06d, 0xc0e19cbffe7712f1, 0x40625ffa664230dd],
    [0x4160b7e6f9c97b42, 0xc0e177ffee645d23, 0x40621fd553790503],
    [0x4160a68121c7fd51, 0xc0e153c0247fc48d, 0x4061e022ad3f11f2],
    [0x4160953f41c1cb97, 0xc0e1300029a7c305, 0x4061e03484d24f9f],
    [0x4160842119fc2e77, 0xc0e10c8104196bd3, 0x406180793ade7b99],
    [0x4160732621d24899, 0xc0e0e9802ac90acb, 0x4061400c707d579f],
    [0x4160624de9b9c654, 0xc0e0c6ffdecce494, 0x40611fe6fc665b9c],
    [0x4160519809b9a728, 0xc0e0a4bfee2a5291, 0x4060dff55a1c254a],
    [0x4160410421f49c5d, 0xc0e08300a882632d, 0x4060a01e74c17ffa],
    [0x41603091c9dd2b70, 0xc0e061c013de07dd, 0x40607fdacbe9d4f0],
    [0x4160204089f314d8, 0xc0e040c07eb587cf, 0x4060603dd1b46fe0],
    [0x4160101019a31d2c, 0xc0e0203feb06de28, 0x40603fee9770f7d2],
];

/// `rsqrt_1_2`: segment `s` = the top 7 mantissa bits; `[c0, c1, c2]` as f64 bits.
static RSQRT_1_2: [[u64; 3]; 128] = [
    [0x416ffffffb3ab6e5, 0xc0efff7986512eec, 0x407799e85271219b],
    [0x416fe02fb499864d, 0xc0efa11e8e726602, 0x40778efe7be90ac4],
    [0x416fc0bd755e01c5, 0xc0ef430318cec947, 0x4076a9ed0765b6ac],
    [0x416fa1a7c62c4f0c, 0xc0eee8677920bcf3, 0x4076ab49857e91ed],
    [0x416f82ec87f1b612, 0xc0ee8de921979c01, 0x4075d2c40325f9e0],
    [0x416f648a44539674, 0xc0ee369d6c5e0d97, 0x4075ceababa520f8],
    [0x416f467f254a79bc, 0xc0eddf5faf13a5d6, 0x4074ff99ddd10724],
    [0x416f28c9c72057c5, 0xc0ed8b6931fdbcfa, 0x40750320a6aa45c8],
    [0x416f0b684dbf4196, 0xc0ed375fddb3d6d3, 0x40743fad1aa777ca],
    [0x416eee596ca5631a, 0xc0ece65bf52c5f19, 0x40743d816e157ad2],
    [0x416ed19b7516fe7b, 0xc0ec955ad83576ac, 0x40738502ad1e2718],
    [0x416eb52d24d3e0fa, 0xc0ec473fb5d4cf9c, 0x4073880f113a2785],
    [0x416e990cd5d33565, 0xc0ebf921482022ff, 0x4072d8adbbea4071],
    [0x416e7d39658ab410, 0xc0ebadc13f4d5f0b, 0x4072d860c7250e19],
    [0x416e61b1353beecd, 0xc0eb625d19e27b3a, 0x40722e6f205c52b0],
    [0x416e46733530e429, 0xc0eb199ee2f2f58b, 0x40722f268ee0bb77],
    [0x416e2b7de6468e4f, 0xc0ead0e13412cf2c, 0x40719033346bc4e9],
    [0x416e10d025199341, 0xc0ea8a9e2743f166, 0x40718f080cda328b],
    [0x416df6689e09f7cc, 0xc0ea44404b4006bb, 0x4070f7e35020c245],
    [0x416ddc464e4c6899, 0xc0ea0061a7f2e2fc, 0x4070f80317cd4e57],
    [0x416dc267adb71276, 0xc0e9bc7d61a22cde, 0x40706e2250d63f4a],
    [0x416da8cc0d9cd581, 0xc0e97ac01d07c204, 0x40707029c42df708],
    [0x416d8f7206db382e, 0xc0e9392267e37f26, 0x406fc11a0eb0b287],
    [0x416d7658a5855c4d, 0xc0e8f99e2b6e3769, 0x406fbdaa096a5040],
    [0x416d5d7e9e6d29e3, 0xc0e8ba20b14f09ed, 0x406ec059ed7bca67],
    [0x416d44e33ed1f47c, 0xc0e87ca40f03ebef, 0x406ec2fdd424d365],
    [0x416d2c853deb3649, 0xc0e83f3ed330e0a6, 0x406dbe8d1398f846],
    [0x416d1463bda8bae2, 0xc0e803bf9912f65e, 0x406dc02492871e2e],
    [0x416cfc7da5d9504d, 0xc0e7c83c65734993, 0x406ccbca2d7b52c0],
    [0x416ce4d2363df499, 0xc0e78ea05211c9e6, 0x406ccf7b2ac5ba49],
    [0x416ccd604e3f9b6c, 0xc0e754fecf10dfca, 0x406bde5430059ff3],
    [0x416cb6272db15a36, 0xc0e71d3d2fad9e25, 0x406bdc7b67e0df33],
    [0x416c9f25bdf1253b, 0xc0e6e55d81aeabb7, 0x406b0cbaf4da5940],
    [0x416c885b6d606229, 0xc0e6af3bde01dd09, 0x406b0b8a03c1bad4],
    [0x416c71c7270e040b, 0xc0e6794213c69660, 0x406a4139b79d34e7],
    [0x416c5b6825c71182, 0xc0e644bdcd72fd87, 0x406a3d61f65e61f5],
    [0x416c453d8e346ce2, 0xc0e6103df6503b47, 0x40696d8701715b6a],
    [0x416c2f46bdd6dfc8, 0xc0e5dd5d403f7cbc, 0x40696c6c47a3375a],
    [0x416c1982b69b9fd2, 0xc0e5aa812e1220fe, 0x4068b13095f83307],
    [0x416c03f0e6e617c1, 0xc0e5792350602b35, 0x4068b2c9c811f3b0],
    [0x416bee905e699a67, 0xc0e547bdcd73b9a5, 0x4067ed532dac95e5],
    [0x416bd9608e11ba9c, 0xc0e517dfbfeee13c, 0x4067f03bcc8d8b1c],
    [0x416bc4609641c33d, 0xc0e4e7dd7c6d8145, 0x40673cef75a86dbf],
    [0x416baf8ff6512bbd, 0xc0e4b95f7714fdac, 0x40673f9466730e79],
    [0x416b9aedb688b805, 0xc0e48ae03e7c43ca, 0x4066a0672fb4c3da],
    [0x416b8679765d4be8, 0xc0e45da016fa57e4, 0x40669fe5a0f15edc],
    [0x416b7232569554cb, 0xc0e4307f120b9d15, 0x4065feab84932def],
    [0x416b5e17d67713ee, 0xc0e4047f93460619, 0x4065feff5281805d],
    [0x416b4a29367e58df, 0xc0e3d89f9c503387, 0x40655f94d7045257],
    [0x416b3665f65e98ed, 0xc0e3ade04d5db038, 0x4065607c676f5a8f],
    [0x416b22cd66774299, 0xc0e3833eb89f6336, 0x4064be9b973abf8c],
    [0x416b0f5ee7bc2f8a, 0xc0e359c49650fb96, 0x4064c2d3d7f7a94b],
    [0x416afc19e69ac515, 0xc0e3303e1c451d1e, 0x40642d94af872292],
    [0x416ae8fdd671f715, 0xc0e307e03803c41e, 0x4064306309b35754],
    [0x416ad60a2eda31ef, 0xc0e2df801eea3152, 0x40639fe375c72341],
    [0x416ac33e4f9db11f, 0xc0e2b843e7841781, 0x4063a25c64bb7154],
    [0x416ab099bf302422, 0xc0e290e0e2867402, 0x40631034bdba5c64],
    [0x416a9e1bee31694e, 0xc0e26abd1080fa88, 0x40630cdb9da6e21d],
    [0x416a8bc44eecdf0f, 0xc0e2447ff928f22d, 0x40629fa2e79100c0],
    [0x416a79926e716bf4, 0xc0e21f3e0f1bc2e5, 0x40629dbfadfebfc8],
    [0x416a6785af1c6146, 0xc0e1fa01b3554bb1, 0x406221aa2beb475d],
    [0x416a559dce6b59fa, 0xc0e1d5bef2573a44, 0x40621edc3c687b9b],
    [0x416a43da0f530f4b, 0xc0e1b1a07622f962, 0x4061af4c8031eae9],
    [0x416a323a1eba3339, 0xc0e18e3f272a4620, 0x4061aef9e0d412d4],
    [0x416a20bd7e7262af, 0xc0e16afcc5cec303, 0x40612c62bda7876f],
    [0x416a0f63aec30c53, 0xc0e1489f0ed622dd, 0x40612eb65d685418],
    [0x4169fe2c46fc8db0, 0xc0e1263fb3504e68, 0x4060bf6af3b04792],
    [0x4169ed16c7f86613, 0xc0e104c2bfd671cc, 0x4060c09cce36f982],
    [0x4169dc22bf0b8412, 0xc0e0e33f67e6133f, 0x40605edf44d7dfcc],
    [0x4169cb4fdeb970ca, 0xc0e0c27f476018de, 0x40605edf40044f1f],
    [0x4169ba9daefceba5, 0xc0e0a1ded4a609af, 0x405fdca3d5ee7df9],
    [0x4169aa0bbed4159c, 0xc0e081fee0f26640, 0x405fdca1b49fc2f1],
    [0x41699999a71a9c40, 0xc0e0621fd34bc08f, 0x405eff69fa52d753],
    [0x41698947076fb7d5, 0xc0e04321e3691df2, 0x405f01f0217782cc],
    [0x416979136f210ec6, 0xc0e023ffad1d3d68, 0x405e3ea711be7d99],
    [0x416968fe8e83d7a8, 0xc0e005be230b421e, 0x405e3bd1ef930af8],
    [0x41695907ff112279, 0xc0dfcebf6b54e64b, 0x405d7f0384fc62e8],
    [0x4169492f5ef74bc9, 0xc0df93bf357947a1, 0x405d7f2b7378c542],
    [0x41693974378a0852, 0xc0df588423dd120b, 0x405ce3d7946ca0db],
    [0x416929d666ab39b6, 0xc0df1ebdde3b0ef6, 0x405cddc8ed3747b0],
    [0x41691a556f0e2b65, 0xc0dee4feae6af600, 0x405c1ec8c8b90c40],
    [0x41690af0ff7ec439, 0xc0deacc529cbb59b, 0x405c2555225332db],
    [0x4168fba89f635f47, 0xc0de74417cd20590, 0x405b80bc6d21f3bb],
    [0x4168ec7c3f53efc1, 0xc0de3d430686520b, 0x405b821e4bf77af6],
    [0x4168dd6b47a99c0b, 0xc0de0642e8137850, 0x405ae15605490fa0],
    [0x4168ce7598555756, 0xc0ddd08a0c4340ee, 0x405ae6e8a378bf4c],
    [0x4168bf9ab74489e6, 0xc0dd9ac0305e3621, 0x405a3fc85767b538],
    [0x4168b0da771da095, 0xc0dd664109c65906, 0x405a413f245fae22],
    [0x4168a2346727a753, 0xc0dd31be89c9d5e8, 0x40599df16b741706],
    [0x416893a857396420, 0xc0dcfe82b83a797c, 0x4059a27f35c57c3e],
    [0x41688535df20d884, 0xc0dccb40ba863583, 0x4059214159d82e1b],
    [0x416876dccf1f731d, 0xc0dc98ff9b6d3135, 0x40591f6780055208],
    [0x4168689cdf715814, 0xc0dc67014a8af84a, 0x40588119eac8b964],
    [0x41685a759ee0f973, 0xc0dc35fda1a91112, 0x40587d3cfc0bc64c],
    [0x41684c66ef1e3d81, 0xc0dc04be23882592, 0x4057ddae4b23bc4c],
    [0x41683e707fad5224, 0xc0dbd5037ae0ec3e, 0x4057e13539273e41],
    [0x41683091ff354d99, 0xc0dba4fdc4e1b606, 0x40575d406f8f5cf1],
    [0x416822cb2fd9f858, 0xc0db7645886faabc, 0x4057640aec46f78c],
    [0x4168151bc729fd3c, 0xc0db473f5a1efd38, 0x4056df5c8f3f27a6],
    [0x4168078397740cd4, 0xc0db19820676f4c1, 0x4056e0ddaba663a4],
    [0x4167fa024768f4b6, 0xc0daeb800520a0f8, 0x40565fd205393170],
    [0x4167ec97b6c3e2a4, 0xc0dabeba8d27e039, 0x40565a06ccbf29bb],
    [0x4167df437f4a8d32, 0xc0da91fe7ac2591b, 0x4055fdd4efa1df0e],
    [0x4167d20580024105, 0xc0da6606eca95005, 0x405604fea09b8fb6],
    [0x4167c4dd77bf8ab7, 0xc0da3a42c1d60795, 0x405581634641ef82],
    [0x4167b7cb17768231, 0xc0da0f4175d69a64, 0x405580fade37f3ce],
    [0x4167aace375597ac, 0xc0d9e43f2e42442b, 0x4054fedbab863620],
    [0x41679de697439dfb, 0xc0d9ba3feb466351, 0x4054fff7ce16154b],
    [0x41679113f76848d2, 0xc0d990413a3a0926, 0x4054a197fbae8e4b],
    [0x416784562780b5f9, 0xc0d967019162bc3d, 0x4054a1374ebca598],
    [0x416777acdf492e55, 0xc0d93dfefe249ffc, 0x40543ed4c44d7b35],
    [0x41676b17ff50f286, 0xc0d9157fb1f865ed, 0x40543efe76abb66c],
    [0x41675e974f55a397, 0xc0d8ed3f40ba2386, 0x4053bf2e6feaf422],
    [0x4167522a90846d66, 0xc0d8c5c88974441a, 0x4053c5690d991a49],
    [0x416745d1874cbf86, 0xc0d89e3d057a1df4, 0x40533c52556dddeb],
    [0x4167398c0738d98c, 0xc0d877bf0d6f59e5, 0x40533ea103906fde],
    [0x41672d59df732820, 0xc0d8510007e714bd, 0x4052dffb04c5658d],
    [0x4167213ad011fa98, 0xc0d82b441b6b02b5, 0x4052e1ffa1c1d398],
    [0x4167152eb7712766, 0xc0d8053f59cc5176, 0x40527ef060d9110e],
    [0x416709355745d878, 0xc0d7e03f1db6509d, 0x40527ef4840198dd],
    [0x4166fd4e8f4a1077, 0xc0d7bafe723bc116, 0x40521e40d6c28b1b],
    [0x4166f17a1f336595, 0xc0d796bd55ba6b21, 0x40521cfa77ca3a28],
    [0x4166e5b7cf5eb017, 0xc0d7723ed3c39503, 0x4051deaec1543ebd],
    [0x4166da079f530357, 0xc0d74e80e8ae566a, 0x4051e12baae5c539],
    [0x4166ce693f8e0f57, 0xc0d72b00f9f502c2, 0x405180d268cf648b],
    [0x4166c2dc7f53ae57, 0xc0d707feee14b3a4, 0x40517ec41dcafec9],
    [0x4166b76137f18b91, 0xc0d6e503182a9ca5, 0x405121bb67186e1b],
    [0x4166abf74758c259, 0xc0d6c2bfab7e9a74, 0x40511f7a19038c16],
];

/// `rsqrt_2_4`: segment `s` = the top 7 mantissa bits; `[c0, c1, c2]` as f64 bits.
static RSQRT_2_4: [[u64; 3]; 128] = [
    [0x4166a09e5756c8bd, 0xc0e6a02557b70597, 0x4070a9cc24529639],
    [0x41668a1f86e9786a, 0xc0e65d85cce9ad0f, 0x4070aa0208d026aa],
    [0x416673e31e4fc25d, 0xc0e61b00c51bc811, 0x407008505533713f],
    [0x41665de82eba0a8d, 0xc0e5dae3b0f9b773, 0x40700923fc2a8e63],
    [0x4166482d3dca41b0, 0xc0e59ade8e09f227, 0x406ece4a15a94c96],
    [0x416632b12c9797f7, 0xc0e55d395741cc3f, 0x406ec916e5a43df9],
    [0x41661d72b55f51db, 0xc0e51f7ab54ee21a, 0x406daa2e0c935f7a],
    [0x41660870e713a84b, 0xc0e4e4246bab2fb1, 0x406db23711be32ee],
    [0x4165f3aa5e3b7d3a, 0xc0e4a8bf6685b26f, 0x406caf10cf16d4fb],
    [0x4165df1e4d8344e2, 0xc0e46f5fadb8027e, 0x406cb06b5501c94f],
    [0x4165cacb6eb2c0ea, 0xc0e43622205119f3, 0x406ba1a670c23aae],
    [0x4165b6b0f12a5dfd, 0xc0e3feeb7827ffd8, 0x406ba7512af469f9],
    [0x4165a2cd96932d1d, 0xc0e3c7c0deacf826, 0x406ab0a8c76de50d],
    [0x41658f208634c731, 0xc0e3926003772806, 0x406aaf677e38ff70],
    [0x41657ba8ae91f33b, 0xc0e35d1ffd8d9bed, 0x4069bfe7f7be7993],
    [0x416568654deeb1ca, 0xc0e3299ee6375ef2, 0x4069beebf0d6f0c1],
    [0x416555555e3cb33e, 0xc0e2f63cc8244b89, 0x4068dc058415ca8f],
    [0x41654277fe02caa0, 0xc0e2c47dbc19d7f9, 0x4068dd0bc9e6bbeb],
    [0x41652fcc475140c3, 0xc0e292c23bf76d4f, 0x406800cf0fd426c7],
    [0x41651d518626a133, 0xc0e262bf346bbe65, 0x4067fefce1797b5e],
    [0x41650b06b663dd91, 0xc0e232bf00b6a509, 0x40672ec869d3a5c6],
    [0x4164f8eb27d00558, 0xc0e20465ad7edd9a, 0x40673400be069cd2],
    [0x4164e6fdf7026971, 0xc0e1d5e1c19d82fd, 0x406671745a838d40],
    [0x4164d53e87edd2f3, 0xc0e1a906f9dc91ca, 0x4066752878289b01],
    [0x4164c3abf680dc59, 0xc0e17c1f38a2438d, 0x4065bf54e6218158],
    [0x4164b2459662d701, 0xc0e150a011ab4ef0, 0x4065c01dadd084d4],
    [0x4164a10a9e2e7de4, 0xc0e1251d965ebcd6, 0x4064fdb5016298ed],
    [0x41648ffa7e5b1a16, 0xc0e0fb2000c107f9, 0x4065006229fb0491],
    [0x41647f1446f23b03, 0xc0e0d10025fa343f, 0x40645fec3766b543],
    [0x41646e57a7cf8e13, 0xc0e0a8455b99d5c2, 0x406463b1ccabbd18],
    [0x41645dc3b6e7f1a5, 0xc0e07f9fb1118a23, 0x4063bf6162db2ff4],
    [0x41644d57d63be43b, 0xc0e0581e8adcae06, 0x4063be5758eb7449],
    [0x41643d1366e6e442, 0xc0e030a04a715588, 0x40631fc73df60d64],
    [0x41642cf5e7190356, 0xc0e00a61196644c3, 0x406320338df510ce],
    [0x41641cfe96d8cfdf, 0xc0dfc83fcd3071b4, 0x40628fac46091a60],
    [0x41640d2d07946f3b, 0xc0df7e0737003e74, 0x406292b8b80dbede],
    [0x4163fd808ecf21ac, 0xc0df33fe728f9cf3, 0x4061ff02727149c1],
    [0x4163edf88e9ece6f, 0xc0deebfee3aaa85e, 0x4061ff397d136bd5],
    [0x4163de9496d4be17, 0xc0dea40059b8b72e, 0x4061704ce65571a3],
    [0x4163cf5406c2b595, 0xc0de5e400363344d, 0x406170132debf0eb],
    [0x4163c03656b9d223, 0xc0de183b14b5ce1c, 0x4060ed0de30850cd],
    [0x4163b13b26ab1282, 0xc0ddd47f7346abdc, 0x4060ef8f22fa9da0],
    [0x4163a261c7ede3ee, 0xc0dd90c546889a2c, 0x4060712d8ee316de],
    [0x416393a9d71932e7, 0xc0dd4f02b15b0ea2, 0x406070c2f744407b],
    [0x41638512c6f3acb7, 0xc0dd0d3d22249f45, 0x405ffc1b13d11b42],
    [0x4163769c26c696e4, 0xc0dccd40c382570a, 0x40600096cc3fc6ae],
    [0x41636845870bc825, 0xc0dc8d4004aa26db, 0x405effdb5d3df10e],
    [0x41635a0e66bb851b, 0xc0dc4f3cd6e8363f, 0x405efc6302233e2d],
    [0x41634bf64758f984, 0xc0dc110179b45839, 0x405e206b88428e67],
    [0x41633dfcd69d4f28, 0xc0dbd4b988f4a5c9, 0x405e1847d40135dc],
    [0x416330217f0338eb, 0xc0db983dfb2538c5, 0x405d5d7ee915a2f1],
    [0x416322640ef59049, 0xc0db5d7eda94278f, 0x405d5e27e650120d],
    [0x416314c3d6bca629, 0xc0db22fb9556d006, 0x405c9b209d3b036e],
    [0x41630740a6e0f091, 0xc0dae9bcd09d83bd, 0x405c9c1c81bd8b2d],
    [0x4162f9da0f1b3b7a, 0xc0dab0c016ee3dfb, 0x405bbff448305826],
    [0x4162ec8f8f878a52, 0xc0da7944915a9994, 0x405bc2cb1458315a],
    [0x4162df60c756ed6f, 0xc0da41c07794f4fb, 0x405b20303bb0cb73],
    [0x4162d24d76f0bbd7, 0xc0da0b80db59673d, 0x405b214f1636f8be],
    [0x4162c5553f3003e8, 0xc0d9d58002a23169, 0x405a4006bd285b90],
    [0x4162b8779e821d38, 0xc0d9a0f9c2d5ddf2, 0x405a39aba1f7bdac],
    [0x4162abb4474ecefb, 0xc0d96c40170a64e8, 0x40599fc4a5e31275],
    [0x41629f0af707c619, 0xc0d938ff34c7c160, 0x40599f18cd08d9ab],
    [0x4162927b473ac623, 0xc0d905bdabc4e1cf, 0x4058dcef910c2543],
    [0x41628604d70c168b, 0xc0d8d3fe0f8b0bca, 0x4058dde12fd75bb0],
    [0x416279a7474a903a, 0xc0d8a1ff7034361f, 0x40585f77f09f1f26],
    [0x41626d6276e41ab5, 0xc0d8713e06a663ae, 0x40585dd92feb7c9e],
    [0x41626135ef4c2b27, 0xc0d840c0a1a25365, 0x4057c09b6eb4ce62],
    [0x416255216efc7cba, 0xc0d8113f909b6e28, 0x4057bfdc543d8433],
    [0x41624924a767acbe, 0xc0d7e200701f8bda, 0x40572040c38dea04],
    [0x41623d3f3705014c, 0xc0d7b3be1ad4e618, 0x40571d4484a4189c],
    [0x41623170df4fdd7a, 0xc0d785809f9bf68c, 0x405680f9b04cffaf],
    [0x416225b95f578051, 0xc0d7588179017da5, 0x405680dcd7a63783],
    [0x41621a1860176688, 0xc0d72b8749d7b395, 0x405605b1709e7e7a],
    [0x41620e8d9f391d05, 0xc0d6ff7f2025b7e6, 0x4055fee742b1fee3],
    [0x41620318d7980fcb, 0xc0d6d3825b000dc1, 0x40556253c83f2540],
    [0x4161f7b9c74d0f11, 0xc0d6a8bf7740fca6, 0x40555ede59c227c4],
    [0x4161ec701fb6fcda, 0xc0d67dc436507f2f, 0x4054e3adce7fc8b5],
    [0x4161e13baf77dd55, 0xc0d65402629ffa2c, 0x4054e2152cec8d1f],
    [0x4161d61c1f6f2e45, 0xc0d62a3fa5e8f771, 0x40545f9ba690e3d8],
    [0x4161cb112f28f363, 0xc0d6017d5c79a74d, 0x40545d05b4689b26],
    [0x4161c01aaf66c374, 0xc0d5d880203d7645, 0x4053dff6e90782dc],
    [0x4161b5385f947a90, 0xc0d5b0c2cfe17b94, 0x4053e2acb5d3da3b],
    [0x4161aa69f75c04a1, 0xc0d588bf9909c29a, 0x40535f1e911cfeb0],
    [0x41619faf472396e5, 0xc0d561fdbe2ce992, 0x40535db89dbee395],
    [0x41619507f7599e96, 0xc0d53aff1002a750, 0x4052fea6af39f141],
    [0x41618a73f6abe037, 0xc0d514f950f57b21, 0x4052f91970952146],
    [0x41617ff2f76314d7, 0xc0d4eefe4e5c26b3, 0x40527dc56d7e5f4d],
    [0x41617584b6e5c99e, 0xc0d4c9fb16c24ec8, 0x40527a9ab1935c38],
    [0x41616b28ffbc3173, 0xc0d4a4c21569882f, 0x405221150fc989d7],
    [0x416160dfaf2d7d78, 0xc0d4807ea6e99e69, 0x40521e877e64cb0d],
    [0x416156a87f7f6cb4, 0xc0d45c4121e3c671, 0x4051c0e853e0fe59],
    [0x41614c833f712cc2, 0xc0d438c0966735f7, 0x4051c043cf5b5463],
    [0x4161426fc73cd460, 0xc0d4153d1ed1ec94, 0x40513c86bb0391cc],
    [0x4161386dc75af7dc, 0xc0d3f2be8c3d1cb1, 0x40513e2b57e4661e],
    [0x41612e7d0769c7b9, 0xc0d3d00031f2ef39, 0x4051002fc98736bf],
    [0x4161249d875c3644, 0xc0d3adfefd6fa464, 0x4050fe9bade56437],
    [0x41611acee77360a2, 0xc0d38c3de9730713, 0x40509d1f1bb26f8b],
    [0x416111111778393e, 0xc0d36b002f7be06f, 0x40509fc5d148fb65],
    [0x41610763d748c230, 0xc0d349fd74abe034, 0x40503d8f47a425a6],
    [0x4160fdc6f76197aa, 0xc0d3297f9ff1a3ba, 0x40503f60445e0100],
    [0x4160f43a5f9a7ca1, 0xc0d30900971ef1ba, 0x404f80aeca05293c],
    [0x4160eabdbf8d3369, 0xc0d2e980b0139065, 0x404f809eace8ce88],
    [0x4160e150f775faa4, 0xc0d2c9bff781c182, 0x404effa868202b8e],
    [0x4160d7f3d767669d, 0xc0d2aabf2f6647b6, 0x404efe0b28fef9d0],
    [0x4160cea63f84eb1e, 0xc0d28bc03cc497f5, 0x404e8090eb76bb56],
    [0x4160c567ffce1f44, 0xc0d26d420ea5905b, 0x404e823f90271ea3],
    [0x4160bc3907a206ca, 0xc0d24f0074a6d737, 0x404dc07fcff84748],
    [0x4160b318f76da6b6, 0xc0d2313f044eb923, 0x404dbd1a79aac7b1],
    [0x4160aa07bf9bf2f8, 0xc0d2137f2dac6cff, 0x404d3d45e97421f2],
    [0x4160a1054f7fb3cd, 0xc0d1f63fe1237bd5, 0x404d3fc94c449d60],
    [0x416098116f7efc42, 0xc0d1d93dff830a6d, 0x404c7ac09df00e86],
    [0x41608f2bef63d4c9, 0xc0d1bcbd7792387b, 0x404c7a3b9e1d0d2c],
    [0x41608654a77a6239, 0xc0d1a03ecf826cd3, 0x404bfc7bed02f9de],
    [0x41607d8b8761f0fe, 0xc0d1843ede70ecef, 0x404bfe1fb764bd72],
    [0x416074d04f524d4d, 0xc0d1687dba8772ce, 0x404b7b2f7301f497],
    [0x41606c22ef9967aa, 0xc0d14d004f8cec4a, 0x404b8035f9b7b5de],
    [0x416063834796c156, 0xc0d131bf8cbdbf4e, 0x404abe6acec238b8],
    [0x41605af11784c8d6, 0xc0d116ffe191ee83, 0x404abee22ec41b78],
    [0x4160526c4fa9f6d1, 0xc0d0fc40fa9ff1fe, 0x404a4252cb00fce0],
    [0x416049f4bf2e0ecc, 0xc0d0e1fcd43f94a8, 0x404a396d0b36b0d5],
    [0x4160418a5fc6cd49, 0xc0d0c7c0c9e7654e, 0x4049c0fbed19d285],
    [0x4160392cefd89c27, 0xc0d0ae01ce71d410, 0x4049c13b11bc3841],
    [0x416030dc5786a8eb, 0xc0d0943ffc06d395, 0x40493fa253979b44],
    [0x41602898878e99af, 0xc0d07aff393bb932, 0x40493ddd7bda7eaf],
    [0x416020614798948e, 0xc0d061be83f4b4b9, 0x4048bc26d4ef186e],
    [0x416018369776abc7, 0xc0d048ff20c2fffb, 0x4048bd79ee50d3d2],
    [0x41601018479a6393, 0xc0d030802faec0c5, 0x40484090ab92ea1c],
    [0x41600806179b1879, 0xc0d01841a7f77d5e, 0x404842d6b52e0d64],
];

/// `sqrt_1_2`: segment `s` = the top 7 mantissa bits; `[c0, c1, c2]` as f64 bits.
static SQRT_1_2: [[u64; 3]; 128] = [
    [0x4160000008812648, 0x40dfffdee5cacaff, 0xc04f9d3e2aa53dbe],
    [0x41600ff8104e6c68, 0x40dfe0416d097c5d, 0xc04fa18b1903c18c],
    [0x41601fe04843b0e9, 0x40dfc0a139334520, 0xc04ee0ed9cf3cc09],
    [0x41602fb8e061c026, 0x40dfa1c1fca3e8f0, 0xc04ee322e3f1720e],
    [0x41603f820077ace9, 0x40df82bfb5abf0a6, 0xc04e1ebc861c3670],
    [0x41604f3bd88fe149, 0x40df64a03eedecfc, 0xc04e20abf2001842],
    [0x41605ee6988a19dc, 0x40df465e318940ec, 0xc04d7c22af71cf06],
    [0x41606e82687421ec, 0x40df28e04d13c8b3, 0xc04d80081ec1d837],
    [0x41607e0f7066d9f8, 0x40df0b40391b9648, 0xc04ccf9f068ec37b],
    [0x41608d8ddc813e71, 0x40deee70dfbe4c6b, 0xc04cd138b44c23c5],
    [0x41609cfdd86b28bc, 0x40ded17f415ee120, 0xc04c3e6fd701fc68],
    [0x4160ac5f884a6f72, 0x40deb540ae2f4e08, 0xc04c4019255b2849],
    [0x4160bbb3106e3f64, 0x40de98fee83af13b, 0xc04bad29ac8da2b5],
    [0x4160caf8a4701b41, 0x40de7d51962bd6a6, 0xc04bb32086ed2348],
    [0x4160da30586f0226, 0x40de619fb5590fa8, 0xc04b1eaaf53a2501],
    [0x4160e95a606d6940, 0x40de468085a67629, 0xc04b2145690ff063],
    [0x4160f876d847f711, 0x40de2b603e6f2edb, 0xc04a80429c876ff3],
    [0x41610785e86de2d7, 0x40de10df5bfbe832, 0xc04a7e0002afc234],
    [0x41611687aff4090b, 0x40ddf662e0954e69, 0xc04a12e18f7d9974],
    [0x4161257c5c43ac59, 0x40dddc526ef64e6d, 0xc04a13cfbebf2761],
    [0x4161346400545347, 0x40ddc25fa8c678ec, 0xc0497ea319e3ab4f],
    [0x4161433ed06a1986, 0x40dda8e0546136a1, 0xc049804060f85def],
    [0x4161520cd8627841, 0x40dd8f5f40315366, 0xc048ee0e56b4380b],
    [0x416160ce4cb3d379, 0x40dd766da1a77169, 0xc048eabcd180b222],
    [0x41616f8340805c10, 0x40dd5d5ee112bebe, 0xc0486d39d4f2a653],
    [0x41617e2bd41221ac, 0x40dd44f16b113f81, 0xc04870822b9aaf8b],
    [0x41618cc8284202c4, 0x40dd2c80e3cca2b2, 0xc048118ba082d658],
    [0x41619b58646ba024, 0x40dd147061318770, 0xc04810ff3799a579],
    [0x4161a9dc9834c94e, 0x40dcfc6180436f0c, 0xc04781fe3b580449],
    [0x4161b854e806fb59, 0x40dce4e2790b372a, 0xc04782f98d10f6ca],
    [0x4161c6c17097be65, 0x40dccd5e6f8e2f23, 0xc0471d004103d45e],
    [0x4161d522588f31dd, 0x40dcb63f08d84830, 0xc0471dd56b1114c0],
    [0x4161e377a0719cd3, 0x40dc9f1eb8f17ee9, 0xc046acb99c76f6de],
    [0x4161f1c1845e3de0, 0x40dc8870dae75652, 0xc046b20963f795b6],
    [0x41620000087ddf6b, 0x40dc71bdb61a1cb0, 0xc0464b52d6ec3879],
    [0x41620e33545df2f1, 0x40dc5b6f9a776666, 0xc0464ef4b770955e],
    [0x41621c5b78495b2a, 0x40dc45402af51455, 0xc045f02d2bbfc762],
    [0x41622a789c601734, 0x40dc2f509f90e2b1, 0xc045f08d37204567],
    [0x4162388ac841e5c1, 0x40dc19811ebc5b83, 0xc04581a7a076e6b3],
    [0x416246922857588f, 0x40dc03ff5456dee6, 0xc0457e3d24c49d0a],
    [0x4162548ec05c1638, 0x40dbee7f560d96ab, 0xc0450d9339575b84],
    [0x41626280bc4f95ce, 0x40dbd96feb8c4362, 0xc0450f683998e15b],
    [0x416270682857e148, 0x40dbc45f04644d02, 0xc044bd49ce2ddac5],
    [0x41627e45288bfd9f, 0x40dbaf9f614c9f74, 0xc044bf71cd1eae68],
    [0x41628c17c03fe925, 0x40db9adfa44eb3c2, 0xc0444ecf01614983],
    [0x416299e01c4cab2e, 0x40db8690e50fdd69, 0xc0445136d6aec804],
    [0x4162a79e402c98e5, 0x40db72201317a13d, 0xc043ef83dccfdf4c],
    [0x4162b552544433b8, 0x40db5e303875bf26, 0xc043f00802c78195],
    [0x4162c2fc600519fa, 0x40db4a2175143071, 0xc043b188de99176e],
    [0x4162d09c844f7d11, 0x40db366f2eedda5d, 0xc043adde71e936d0],
    [0x4162de32d0308d4d, 0x40db22c0bd154419, 0xc04351801900b721],
    [0x4162ebbf5bf6434b, 0x40db0f719848ffc5, 0xc04351134cfac117],
    [0x4162f94238152200, 0x40dafc01e8ede146, 0xc043024af7593026],
    [0x416306bb7857e719, 0x40dae8ff9de66f74, 0xc042ff21623e6e6a],
    [0x4163142b37fd6625, 0x40dad601eb40979c, 0xc042b1c57f5ddc46],
    [0x416321918c4ed42c, 0x40dac34fab684397, 0xc042af5cf6f27823],
    [0x41632eee8050a021, 0x40dab08020b4f5ce, 0xc0425ffa19354d0d],
    [0x41633c422833403e, 0x40da9e1fe4370b01, 0xc0425ed8eca70360],
    [0x4163498ca05e5188, 0x40da8bbebe1d2f42, 0xc0421ce1b7e06aed],
    [0x416356cdf84e9c2d, 0x40da799f4f6679a0, 0xc0421e1afec1eaf7],
    [0x41636406381c90a5, 0x40da6780e4027ac4, 0xc041d13d3556811a],
    [0x4163713583ff8022, 0x40da55b23ad04b6c, 0xc041d2e2a0021f2f],
    [0x41637e5be0461927, 0x40da43bfb69e8f08, 0xc0417eabd2554614],
    [0x41638b7960530dfd, 0x40da32401c5c5b99, 0xc0417fc0c477ed39],
    [0x4163988e182eb825, 0x40da20c02ad24333, 0xc04150167a3bec1a],
    [0x4163a59a246950af, 0x40da0f6f5f8bce81, 0xc0414eb5cc8ad7fd],
    [0x4163b29d885677b5, 0x40d9fe1f36835689, 0xc040fde1b43433b1],
    [0x4163bf9858796c4f, 0x40d9ed1e98cfac39, 0xc040fd2be00f02b0],
    [0x4163cc8aa04c0cd0, 0x40d9dc1ff3d5c770, 0xc040bfb9ec0205d3],
    [0x4163d9748044b947, 0x40d9cb60606b1294, 0xc040c121b1c57be6],
    [0x4163e655f833bc41, 0x40d9ba9fe4989ebc, 0xc0408fbd36623a4b],
    [0x4163f32f23f246c4, 0x40d9aa1227a3a86b, 0xc04092659536b1e5],
    [0x416400000810dc5c, 0x40d999a19a3a7580, 0xc040518b7e60e1a8],
    [0x41640cc8c467a33b, 0x40d9894e9cc84562, 0xc0404cb7fc13d0a7],
    [0x416419895827792c, 0x40d978fffb4dbe54, 0xc03fdf2bc2e748b9],
    [0x41642641dc4134cd, 0x40d9690fb8798e0b, 0xc03fde699570d3d1],
    [0x416432f258115e1f, 0x40d9590117d4e574, 0xc03f83d26d761be6],
    [0x41643f9ae84acba6, 0x40d9493f4c2d7a8a, 0xc03f7de965866d65],
    [0x41644c3b8830f101, 0x40d939805ed98bb4, 0xc03f1f9332b5d2d7],
    [0x416458d4641743f4, 0x40d929f0e33b271a, 0xc03f227a435dfec2],
    [0x4164656568460d22, 0x40d91a4023a87b56, 0xc03e80ea15bf88b4],
    [0x416471eeb8317c0f, 0x40d90affc9051343, 0xc03e7e816704fdd0],
    [0x41647e7060478783, 0x40d8fba08bc95c24, 0xc03e426987aa0901],
    [0x41648aea6851c852, 0x40d8ec7fa8441f53, 0xc03e3d50a19770dd],
    [0x4164975ce04de473, 0x40d8dd5ecb84e143, 0xc03db9984be87783],
    [0x4164a3c7d83a658f, 0x40d8ce811b951f97, 0xc03dc3c08b00b6af],
    [0x4164b02b585383e6, 0x40d8bf9edfc10bb6, 0xc03d7af49702618f],
    [0x4164bc877860b14b, 0x40d8b0df95763f9d, 0xc03d7e406b8edad3],
    [0x4164c8dc37f9b832, 0x40d8a222320aee74, 0xc03ce689f0fd64ba],
    [0x4164d529abf6986a, 0x40d893b304c3e784, 0xc03cea04a1f196fb],
    [0x4164e16fe03f7d6c, 0x40d8853f936e4e5e, 0xc03c9d49e933194a],
    [0x4164edaeebfe1b9e, 0x40d876f1c2c9a224, 0xc03ca3576ddbf1b1],
    [0x4164f9e6c0196959, 0x40d868a1267fa08c, 0xc03c4335fc471b3b],
    [0x41650617884081cd, 0x40d85a80a0f23cbc, 0xc03c41d3c58d88af],
    [0x41651241403c44c3, 0x40d84c603ed34c61, 0xc03bc09b712dd70b],
    [0x41651e63f85cf1a8, 0x40d83e7efdec6ec5, 0xc03bbb85209f6f2b],
    [0x41652a7fb04b37dd, 0x40d8309f5f95fbe3, 0xc03b9ce2e3ccf8e9],
    [0x416536948c78572b, 0x40d822cd9ab72e87, 0xc03b966a1f442b70],
    [0x416542a2801ffa5f, 0x40d815204ef01343, 0xc03b20f1ece316ed],
    [0x41654ea9ac1cee5e, 0x40d80790eb10b4b1, 0xc03b21b427dc1ef3],
    [0x41655aaa0845175a, 0x40d7f9ffabef17d2, 0xc03abe4935163cf5],
    [0x416566a3b043d1d6, 0x40d7ec9f95bbbce6, 0xc03abd4e0450f3bb],
    [0x41657296a0091151, 0x40d7df40e7b4a856, 0xc03a6108a5715a4b],
    [0x41657e82f431e8df, 0x40d7d21101ef8012, 0xc03a63c81ccb4286],
    [0x41658a68b044c67c, 0x40d7c4bfb979eec9, 0xc039ded2c3199823],
    [0x41659647d44e1053, 0x40d7b7cfca3f0bde, 0xc039df2cb7b753f0],
    [0x4165a220781ae75b, 0x40d7aae023d151d5, 0xc039e04c98f3e78c],
    [0x4165adf2ac21ec1f, 0x40d79df0a0181bf9, 0xc039dfa03cee90e1],
    [0x4165b9be683da1b0, 0x40d7910002cda4a7, 0xc0393fac41ebff96],
    [0x4165c583c041009a, 0x40d7845fb0163e8e, 0xc0393d4b7d679397],
    [0x4165d142bfecf7ff, 0x40d777a1fe0fcbea, 0xc039051e85c2c415],
    [0x4165dcfb704a5cc6, 0x40d76b1f76d3f685, 0xc038fd9cd783baa0],
    [0x4165e8add83d4f0e, 0x40d75e9f912def81, 0xc038ddd7a4516c30],
    [0x4165f45a0c33822b, 0x40d7522fb113eff8, 0xc038de5096caa37d],
    [0x4166000008172b46, 0x40d745bfc622da1b, 0xc0383e429921690f],
    [0x41660b9fe00d9c83, 0x40d739a12b2bad4f, 0xc03842c08e2897ae],
    [0x416617399815ad9b, 0x40d72d6165ddf9ce, 0xc03844d76a3c29c1],
    [0x416622cd401efa40, 0x40d7214118a90360, 0xc038432c1da4b042],
    [0x41662e5ad80c6c18, 0x40d71520fcff9d8e, 0xc037c3c69f52170f],
    [0x416639e27044275f, 0x40d7094003199bfa, 0xc037bfd41f77f8ef],
    [0x41664564103c649a, 0x40d6fd3fbc3c54a8, 0xc0377e434d9b30f0],
    [0x416650dfc00805cb, 0x40d6f180d2fd956a, 0xc03780acee80658a],
    [0x41665c558838e28e, 0x40d6e5bffc9e034c, 0xc0375f942e0fb7ee],
    [0x416667c57c3b2772, 0x40d6da102e5184cb, 0xc0376058548d4e50],
    [0x4166732f98361c38, 0x40d6ce605b795a7e, 0xc037015e0526766a],
    [0x41667e93e817065a, 0x40d6c2e169be455c, 0xc037041c092951ec],
    [0x416689f27840f182, 0x40d6b75fe202c04d, 0xc036c01a76ebe356],
    [0x4166954b505548c0, 0x40d6abff4acd6a7d, 0xc036bd014fbfefe2],
];

/// `sqrt_2_4`: segment `s` = the top 7 mantissa bits; `[c0, c1, c2]` as f64 bits.
static SQRT_2_4: [[u64; 3]; 128] = [
    [0x4166a09e70d057b9, 0x40e6a080150240ff, 0xc056505ad836c1a7],
    [0x4166b733c8cfd871, 0x40e68a2fc9feaf96, 0xc0564fa06fffbed9],
    [0x4166cdb2c8b35020, 0x40e673bfb300777e, 0xc055c6e8b1eed037],
    [0x4166e41ba41e3542, 0x40e65df9a4c1cde8, 0xc055c8efeac508b0],
    [0x4166fa6ea8767371, 0x40e6481ff1c782e7, 0xc0555f147378c127],
    [0x416710ac17d457b5, 0x40e632c364dc73a9, 0xc0556490f95d36f1],
    [0x416726d42067ad82, 0x40e61d6171222163, 0xc054e2ae4d3ac392],
    [0x41673ce710c1a855, 0x40e6087fd1948a7a, 0xc054df77ad5d9012],
    [0x416752e517f79c8a, 0x40e5f3a2b242cf38, 0xc0547bac8f6afcbd],
    [0x416768ce7cc5372f, 0x40e5df2894a1155d, 0xc054792c18bf2bb8],
    [0x41677ea368922b78, 0x40e5cabfe18f6210, 0xc054074d63fd5763],
    [0x416794642485bd5b, 0x40e5b6b8f218784a, 0xc05409d17bf227b5],
    [0x4167aa10d882b845, 0x40e5a2c08a1da977, 0xc05390ce03dec09d],
    [0x4167bfa9d06984d7, 0x40e58f30a8243a03, 0xc05390603e5fc5ff],
    [0x4167d52f28b4073a, 0x40e57b9f46f49eff, 0xc053263daa43c47c],
    [0x4167eaa13462233c, 0x40e568797ba4d667, 0xc0532ada280086ef],
    [0x4168000008930259, 0x40e5553f7ed145fb, 0xc052b651179739f0],
    [0x4168154beca54e6d, 0x40e542879c2c3827, 0xc052b6b6db7eb3ee],
    [0x41682a85087e80ec, 0x40e52fc0af5300a3, 0xc0526136a04b66cd],
    [0x41683fab98acddcd, 0x40e51d5f29af1f6b, 0xc0525de16f5c8ec3],
    [0x416854bfb86a3e3d, 0x40e50b00835d0723, 0xc052090d7908dbba],
    [0x416869c1b4c22bd9, 0x40e4f8f74e2cf77e, 0xc05206258bcea9de],
    [0x41687eb1a07ef758, 0x40e4e6ffca4ed3ee, 0xc051b704addd9a33],
    [0x4168938fc4998c99, 0x40e4d548a72a45f3, 0xc051b940e6da3a4d],
    [0x4168a85c3098cfc0, 0x40e4c39fbee5e1b0, 0xc0514f507ce65e9d],
    [0x4168bd172811ba06, 0x40e4b251d8aa1103, 0xc051525e4dc67570],
    [0x4168d1c0c873cc20, 0x40e4a0fffe0be67a, 0xc050feff9b758db8],
    [0x4168e659486253ac, 0x40e4900117f91fd1, 0xc05101ef9dd638b6],
    [0x4168fae0c8708d3d, 0x40e47effde8b1a13, 0xc050974f1efdca0d],
    [0x41690f577cbe2781, 0x40e46e673a4e42db, 0xc050963e63a00a17],
    [0x416923bd886dc457, 0x40e45dc013ae21f8, 0xc0505fafaee17042],
    [0x4169381318896755, 0x40e44d5ff71fdf98, 0xc0505fa27e44a11f],
    [0x41694c58489ac17b, 0x40e43cff046483ef, 0xc04ffb7b7df5db36],
    [0x4169608d48ad80aa, 0x40e42cff87f65585, 0xc04ffe463d4c5c01],
    [0x416974b2386f6ecc, 0x40e41cffb8ca9efa, 0xc04f8e0735ca8536],
    [0x416988c754866ecb, 0x40e40d3794941a61, 0xc04f8cddbc718310],
    [0x41699ccca0578549, 0x40e3fd8020b77197, 0xc04effcf23b22aa8],
    [0x4169b0c25fcb57c2, 0x40e3ee0322635954, 0xc04f08c33dd8630e],
    [0x4169c4a8a09b0969, 0x40e3de7f1b92a84f, 0xc04e3b7116c2b432],
    [0x4169d87f900643ee, 0x40e3cf6209002490, 0xc04e44fe755a19ea],
    [0x4169ec4758692dda, 0x40e3c020314a3da4, 0xc04dc0c34bea9077],
    [0x416a0000089bfcfe, 0x40e3b13ff302afdc, 0xc04dc0331c03296f],
    [0x416a13a9d067eef4, 0x40e3a26032264459, 0xc04d60f561b50bcf],
    [0x416a2744d87703fe, 0x40e393b049d7a046, 0xc04d60e055b1b605],
    [0x416a3ad1385580b5, 0x40e38500207d8b7e, 0xc04cafd638224678],
    [0x416a4e4f0c9c0718, 0x40e376a7d98f7c01, 0xc04caf9a8cafc920],
    [0x416a61be78807eff, 0x40e3683ff11655f2, 0xc04c4fa0cad4358c],
    [0x416a751fa477f292, 0x40e35a183cf591c8, 0xc04c506d8c509546],
    [0x416a8872a05b5563, 0x40e34be0351ebd19, 0xc04bb09806b1a9b1],
    [0x416a9bb794937a39, 0x40e33e07bcaad5e6, 0xc04bae31c857d38d],
    [0x416aaeeea060cafc, 0x40e3301fb1dcfe24, 0xc04b6df18aa79533],
    [0x416ac217e47d9473, 0x40e322672b0e95bc, 0xc04b6bbb7c7e8883],
    [0x416ad53370593c06, 0x40e314c021859ea1, 0xc04af054d6c17c38],
    [0x416ae841747b041a, 0x40e3074836d09de6, 0xc04af1344cc32463],
    [0x416afb41f85c898b, 0x40e2f9dfdd58428f, 0xc04a8f73462caa65],
    [0x416b0e353497b31c, 0x40e2ec97c4b7414f, 0xc04a8eaf83978d78],
    [0x416b211b20493f8e, 0x40e2df6053149aeb, 0xc04a110e2359c48d],
    [0x416b33f3fc4fd444, 0x40e2d2589687c032, 0xc04a12379e60fa25],
    [0x416b46bfc809081e, 0x40e2c540cf703e18, 0xc049812c337e1503],
    [0x416b597ea871c71d, 0x40e2b880096c51e0, 0xc0497ff3d22fc48c],
    [0x416b6c30c0793408, 0x40e2ab9f72b8381d, 0xc0490d268e073e8d],
    [0x416b7ed61c556415, 0x40e29f1842a86197, 0xc04910d524812f0c],
    [0x416b916ee03e79fb, 0x40e292800d4a620d, 0xc048ef40642c7add],
    [0x416ba3fb248108fc, 0x40e28607367a3399, 0xc048ec41cbddc3d5],
    [0x416bb67af04afed2, 0x40e279a018a47433, 0xc048704ad8c047a0],
    [0x416bc8ee74543c07, 0x40e26d686795a612, 0xc048715384b72970],
    [0x416bdb55c0493aa1, 0x40e2611fd996cea0, 0xc047eefe2ae8676e],
    [0x416bedb0e44c53cd, 0x40e25528c0431854, 0xc047f187ec12e182],
    [0x416c0000086a5c15, 0x40e2491fee7fac5d, 0xc047aff6eaa80f7a],
    [0x416c12433c6eab89, 0x40e23d47d8ac7dab, 0xc047af1c864db565],
    [0x416c247a9043e946, 0x40e231607f9bab0e, 0xc04741c4956e1a97],
    [0x416c36a6207ce062, 0x40e225bf47c148ee, 0xc0473bec5d89674f],
    [0x416c48c608104bdf, 0x40e21a21224bbee4, 0xc04722b962b2c211],
    [0x416c5ada6047a126, 0x40e20e901380a81e, 0xc0471ef9b728fed1],
    [0x416c6ce3285430ef, 0x40e203204925518a, 0xc046c1bfa993f347],
    [0x416c7ee09828f993, 0x40e1f7c0d013afe8, 0xc046c184572d8f5c],
    [0x416c90d2a841b944, 0x40e1ec60a9ade6b9, 0xc04641f833eabeb3],
    [0x416ca2b9786cc505, 0x40e1e13f84226ad3, 0xc0463d802f271e71],
    [0x416cb4952061ad8b, 0x40e1d61fa10351b1, 0xc0460dabeb02ed1f],
    [0x416cc665bc37f91c, 0x40e1cb188d84e14d, 0xc046116e883e1073],
    [0x416cd82b48341033, 0x40e1c020a63a266f, 0xc045c2842b00b8a8],
    [0x416ce9e5f8431cca, 0x40e1b5401f4cba35, 0xc045bfe5cf15b0e5],
    [0x416cfb95c829f4ed, 0x40e1aa6053b26a82, 0xc0454f7fbbbae7fd],
    [0x416d0d3ad46cd3fc, 0x40e19fb7da0caf53, 0xc0454ec10adf4ab5],
    [0x416d1ed5284bb037, 0x40e1950003e3139d, 0xc044ffd5989d4b24],
    [0x416d3064e84decc9, 0x40e18a80041b8c95, 0xc044ff991cc5180e],
    [0x416d41ea1853b4b2, 0x40e17fdfc94ece4c, 0xc0449e20c86ce17f],
    [0x416d5364d07c567d, 0x40e1758f3c871ebf, 0xc0449c32ba2151d0],
    [0x416d64d5283d4116, 0x40e16b1fee8d48e0, 0xc0446f3a80a1ee83],
    [0x416d763b2c63301f, 0x40e160e81d1af2c9, 0xc04470079ca7eb76],
    [0x416d8796f0293da7, 0x40e156a071409c96, 0xc04431be2115c0fe],
    [0x416d98e88470bcb3, 0x40e14c8811b48424, 0xc044305483db11fa],
    [0x416daa2ff86a7a36, 0x40e1425f668a8825, 0xc043cd1aa45d6ffa],
    [0x416dbb6d645d6578, 0x40e13877bfb5cf6b, 0xc043cec47e2979c5],
    [0x416dcca0d8360c61, 0x40e12e8038dda9d3, 0xc043c0cbee785dfe],
    [0x416dddca6810415f, 0x40e124a10c6736bb, 0xc043c1db262815b8],
    [0x416deeea183ebba8, 0x40e11ac0f85ea076, 0xc04354608590d66e],
    [0x416e000004781fad, 0x40e1111750f72543, 0xc0434daa891e014c],
    [0x416e110c40343e37, 0x40e1075ff6ee2e68, 0xc0431f1404036c7e],
    [0x416e220ed873bb88, 0x40e0fdcf2ddc8924, 0xc0431c072630d58d],
    [0x416e3307d011b3f1, 0x40e0f4410e0131b0, 0xc042f4561e7da91d],
    [0x416e43f7547c9ffe, 0x40e0eac7b82a5fdf, 0xc042ef33f058986a],
    [0x416e54dd586c3382, 0x40e0e13f3fd8bf2f, 0xc0428cc0ed8730a9],
    [0x416e65b9f4786493, 0x40e0d7f717c4a547, 0xc0428c2f73fb0e31],
    [0x416e768d40523a16, 0x40e0cea026664192, 0xc04260f2b7caa04a],
    [0x416e875747f58a64, 0x40e0c5716f9226c1, 0xc042635f7e4c4e33],
    [0x416e98181860e536, 0x40e0bc3ff14251d8, 0xc0424fe3cae39ec7],
    [0x416ea8cfc45e3ec1, 0x40e0b3183c440abe, 0xc04250ec5199df3b],
    [0x416eb97e5060eae6, 0x40e0a9ff63b75b87, 0xc041ed192d8f84ae],
    [0x416eca23d46a3841, 0x40e0a107bb961ab5, 0xc041ee84e9485c44],
    [0x416edac06054c24f, 0x40e097ff9927d323, 0xc0419db15ad9b5f1],
    [0x416eeb53f89507bc, 0x40e08f2eaf2a9b68, 0xc0419ab614a6fb25],
    [0x416efbdeb851e28e, 0x40e0865fb07aba72, 0xc0419e127e94609a],
    [0x416f0c60b06912f4, 0x40e07d8f985f7aed, 0xc0419de560c68fba],
    [0x416f1cd9d81f26ef, 0x40e074c0837fe29b, 0xc04130d51a928d05],
    [0x416f2d4a4c3f486a, 0x40e06c284281e5f4, 0xc04131a3d1f1dd6e],
    [0x416f3db22020e1e9, 0x40e0638057ac1e9c, 0xc04111618cd18c73],
    [0x416f4e115c6de172, 0x40e05af70010c047, 0xc0410c1b7bfd6f15],
    [0x416f5e6808503583, 0x40e052600a43c263, 0xc040d01b90d32056],
    [0x416f6eb63465243b, 0x40e049f799f51a18, 0xc040cde2987dad26],
    [0x416f7efbf851c2f8, 0x40e0417fd2aff003, 0xc0409eef7e717b79],
    [0x416f8f39506d7eb5, 0x40e0392f6a8040f3, 0xc0409d4dd527d175],
    [0x416f9f6e502eea98, 0x40e030dff8d6bd1c, 0xc0407f628e07f308],
    [0x416faf9b1046e005, 0x40e0289fa78a8913, 0xc0407e5406039c34],
    [0x416fbfbf88274a2a, 0x40e020601f8d8a4e, 0xc0405053e61e0323],
    [0x416fcfdbd4395ae5, 0x40e01837d1c4dcd2, 0xc0404efe9e62b014],
    [0x416fdfeff8367100, 0x40e010206bbeec89, 0xc0403192ccdc12ce],
    [0x416feffc0c36b550, 0x40e00808693a5d74, 0xc040316315c49b3c],
];

/// `ex2_1_2`: segment `s` = the top 7 mantissa bits; `[c0, c1, c2]` as f64 bits.
static EX2: [[u64; 3]; 128] = [
    [0x416000001ccfbabd, 0x40e62e4155764290, 0x405edcb54fcd857b],
    [0x4160163dccc8e88d, 0x40e64d1f0c8a154f, 0x405ee38c5562b851],
    [0x41602c9a551dcbeb, 0x40e66bff761733a5, 0x405f50dae6ee3bb5],
    [0x41604315fcd593c4, 0x40e68b4f821fc3be, 0x405f512f03b54a7f],
    [0x416059b0f4c1a354, 0x40e6aa81783130bd, 0x405f9d01540eaf11],
    [0x4160706b448ad66c, 0x40e6ca21ffd741f0, 0x405f9bb4ff7d943f],
    [0x416087452d4f7438, 0x40e6e9be9cfe0e84, 0x405ff1ecb4dd101a],
    [0x41609e3ee4d1783c, 0x40e709b01dd56673, 0x405fef784e641be4],
    [0x4160b55894d2f983, 0x40e72980e464eac3, 0x40602f089ec3b8a8],
    [0x4160cc9244fb972d, 0x40e749e03782d198, 0x40602f5a1dedaa7b],
    [0x4160e3ec4d03881f, 0x40e76a400de658bd, 0x40604794dc4e0a7a],
    [0x4160fb66d479759b, 0x40e78ad1ca66dfce, 0x406045fad9b3e838],
    [0x41611301e4f45c60, 0x40e7ab80efdf7b7c, 0x406076cf48d904b1],
    [0x41612abddcc6bc57, 0x40e7cc6fb4ba6c60, 0x4060780e3517a8b6],
    [0x4161429acd09672d, 0x40e7ed7f87c4099a, 0x4060a07c70d2b33c],
    [0x41615a98ec876307, 0x40e80ec11aa3a7dc, 0x40609eba3bb07e38],
    [0x416172b866119e3b, 0x40e82ffbd38e109a, 0x4060eac6300e7dbe],
    [0x41618af94ce441bf, 0x40e851cf9764837a, 0x4060e8017b3a82e4],
    [0x4161a35c0cd3b42c, 0x40e87381c3e0a4aa, 0x40610db0d3b4cc76],
    [0x4161bbe09c9e3f85, 0x40e895a1838646a4, 0x40610e32d027cf39],
    [0x4161d48744f5415a, 0x40e8b7c08e812d74, 0x406136eebb405a83],
    [0x4161ed503d08107c, 0x40e8da2e8cd79601, 0x4061390c7731be02],
    [0x4162063bacd9d8f4, 0x40e8fc7fdcb92695, 0x40617858bd33f7d5],
    [0x41621f49a560a567, 0x40e91f6eb72699ea, 0x406177dc068b54c5],
    [0x4162387a8cbd0a98, 0x40e9423fd7eb498a, 0x4061a06afc6fe2f1],
    [0x416251ce6cc5cb7d, 0x40e9658135970c04, 0x40619e1d879de89a],
    [0x41626b4584d6739e, 0x40e988c0ea9a7d38, 0x4061be8274063c3e],
    [0x416284e0045acab0, 0x40e9ac41adb5f290, 0x4061be168031f5fb],
    [0x41629e9e1d8f18df, 0x40e9cfbdc8b426ec, 0x406209237e131a33],
    [0x4162b87fe4a78ff9, 0x40e9f3d1ce75fb59, 0x4062058cba74ae38],
    [0x4162d285ccf476a5, 0x40ea17bfb611be8e, 0x406237e2f2e5b22d],
    [0x4162ecafc49d12fb, 0x40ea3c30bc072001, 0x4062371515c3239b],
    [0x416306fe2cf118e9, 0x40ea607f8fc3c08d, 0x4062687cc44bd476],
    [0x4163217115452ca1, 0x40ea854dab69291f, 0x406269c573ba3718],
    [0x41633c08d4ceed11, 0x40eaaa00235a0a7e, 0x40629fa73842ce65],
    [0x416356c5749aa7d9, 0x40eacf4109fe4a07, 0x40629e835979ee77],
    [0x416371a74e5c4824, 0x40eaf47979e24f13, 0x4062c4f7bfb6f066],
    [0x41638cae8c718b79, 0x40eb1a00965695eb, 0x4062bf5e86ff20e2],
    [0x4163a7db549f6a3f, 0x40eb3f809dc4a6da, 0x4063075738004623],
    [0x4163c32ddc7edfee, 0x40eb65904d814f07, 0x406307ae9b77cb69],
    [0x4163dea664d7a1a2, 0x40eb8b80a26d3892, 0x406336f4b3c3f271],
    [0x4163fa451cbab0d3, 0x40ebb1eef6f05460, 0x406338d60de3da8f],
    [0x4164160a45ba2afa, 0x40ebd83d0acd8cb0, 0x406370f752f7b940],
    [0x416431f5f4386a95, 0x40ebff219b48de1e, 0x40636e5d0bf6c2d1],
    [0x41644e0874dd51b5, 0x40ec25ffd4218d47, 0x4063980871f674cf],
    [0x41646a420c0634cc, 0x40ec4d32e2a9862f, 0x406395338a24f8c5],
    [0x416486a2cca2ec9b, 0x40ec747ff90a0344, 0x4063c80b54b8ecec],
    [0x4164a32b14950c3b, 0x40ec9c100fe46139, 0x4063c7d328641e53],
    [0x4164bfdaecc5b519, 0x40ecc3bf1b694dda, 0x4064090cd1ff7826],
    [0x4164dcb2b484e316, 0x40ecebcfccb62801, 0x406407e555e0be63],
    [0x4164f9b28c828c2e, 0x40ed140238662d32, 0x40643550e4c09353],
    [0x416516dac455177b, 0x40ed3c6fc6d9d45f, 0x4064385e9f2f5442],
    [0x4165342b6c86c3e1, 0x40ed65019b80bff5, 0x40647623c0bb556f],
    [0x416551a4e45070f6, 0x40ed8def4e2fbb1f, 0x406479540159498f],
    [0x41656f4754782166, 0x40edb701ed860dbe, 0x4064a584d91585ad],
    [0x41658d12fcf914e5, 0x40ede04e6efae79c, 0x4064a8898bb75fd3],
    [0x4165ab07f4a460ea, 0x40ee09bfbfab64a9, 0x4064f02e302bf4b0],
    [0x4165c926a3ef4565, 0x40ee33a396f8cd2b, 0x4064ebf3340a36b0],
    [0x4165e76f2c96fb41, 0x40ee5d7faf93ddd2, 0x40652878c4738f92],
    [0x416605e1d4ac7046, 0x40ee87ce7b3a312d, 0x40652996ea3530a6],
    [0x4166247ed4c9cf37, 0x40eeb1ffebe7d62f, 0x40656fd0e419655c],
    [0x4166434645fd5306, 0x40eedcdacc3d1d45, 0x406572fcaa517e91],
    [0x416662389c32c74a, 0x40ef07c199559e19, 0x4065966b213d253d],
    [0x41668155f46a1406, 0x40ef32f0675ec6f4, 0x4065973f1aebcbd4],
    [0x4166a09e7cc29f6c, 0x40ef5e40f2736d59, 0x4065d660e627d1f1],
    [0x4166c01294c5502e, 0x40ef89ed2bb25e14, 0x4065dac10d392ad4],
    [0x4166dfb25c78efeb, 0x40efb5c102d1efa9, 0x406606fce9d20d10],
    [0x4166ff7e241cfa4a, 0x40efe1d24bf1be6b, 0x4066054e1df91946],
    [0x41671f760c8b919f, 0x40f007005bb4cb33, 0x4066571c8731787d],
    [0x41673f9a642332d7, 0x40f01d587a55a2cb, 0x406656fda837c998],
    [0x41675feb6c78d173, 0x40f033c0bf465dcd, 0x40668617d5f9f754],
    [0x416780697432299a, 0x40f04a481ba55f36, 0x406687caf206fd40],
    [0x4167a1148c6092a5, 0x40f060e0d8b2b241, 0x4066cdead7f4ac66],
    [0x4167c1ed1c578668, 0x40f077b07a896974, 0x4066ce9a9acc40f0],
    [0x4167e2f354b46f21, 0x40f08e805411b7a6, 0x406716e998bed45a],
    [0x416804276bf37316, 0x40f0a59891a1b029, 0x406716dfc20713a1],
    [0x41682589bdcb8afb, 0x40f0bc9dd946ce10, 0x406762d433b6919f],
    [0x4168471a5bc757bc, 0x40f0d4016eb08685, 0x40675cc443f42dad],
    [0x416868d9b48d6491, 0x40f0eb601c55aa27, 0x406787a0db4a91b7],
    [0x41688ac7fc6406b5, 0x40f102e80520852b, 0x40678797b8469cce],
    [0x4168ace55c7ed940, 0x40f11a80a3e48f18, 0x4067d62bd48219a9],
    [0x4168cf32342a0f50, 0x40f1325840302677, 0x4067d76963a385dd],
    [0x4168f1aeb3f54b3d, 0x40f14a21a44800d1, 0x4068244256b68c31],
    [0x4169145b1c93d43c, 0x40f16246fe0a110e, 0x406829c645edce33],
    [0x41693737d49eb7c0, 0x40f17a600a8490e7, 0x406857a8e4805ae1],
    [0x41695a44ec2d8df5, 0x40f192b8531d86f4, 0x40685701c3a4d4e7],
    [0x41697d82bc9a3066, 0x40f1ab1fee51ef7d, 0x406897be1f9449fa],
    [0x4169a0f19413fb69, 0x40f1c3b8cfda18ca, 0x40689631079d1001],
    [0x4169c4919c0fbbbd, 0x40f1dc6142cbf423, 0x4068dd30436993af],
    [0x4169e8633bc2c9ab, 0x40f1f540dfe58945, 0x4068de14806420b1],
    [0x416a0c6694726ee1, 0x40f20e2036322a26, 0x40692f4f1e55fcf5],
    [0x416a309c03df3688, 0x40f22750ca9888cc, 0x40692dfaf0a46f24],
    [0x416a5503cc621957, 0x40f2407ffd2980be, 0x406967dab8ac2e3f],
    [0x416a799e33d28dca, 0x40f259e88b7b85a6, 0x406966e8989b0068],
    [0x416a9e6b6cbf18b8, 0x40f273602caa9354, 0x4069aea7885b82af],
    [0x416ac36bdbc56510, 0x40f28d10645765ca, 0x4069af503fec8df9],
    [0x416ae89fbcc59711, 0x40f2a6bf10841adb, 0x406a09444d07dc30],
    [0x416b0e07440aae7e, 0x40f2c0c83e29111e, 0x406a075b319ddc07],
    [0x416b33a2d4812137, 0x40f2dac0257bef5f, 0x406a4efc0eaf3009],
    [0x416b5972a4765f2f, 0x40f2f50f71bffde8, 0x406a507d0e9ecbe4],
    [0x416b7f770c3feb19, 0x40f30f60759da3d8, 0x406a86c9260984f9],
    [0x416ba5b0536345a3, 0x40f329e957a1301c, 0x406a853cb3068d98],
    [0x416bcc1eb415fa7c, 0x40f34480b1d0d69e, 0x406ace769c27fdbe],
    [0x416bf2c284847b2b, 0x40f35f4f75da472c, 0x406acfd2dae2e740],
    [0x416c199c04d23f65, 0x40f37a1fc6ef598a, 0x406b2f404acc3020],
    [0x416c40ab73602719, 0x40f3955221080db4, 0x406b2b5933627206],
    [0x416c67f153ff5ab1, 0x40f3b07ffba80457, 0x406b68852005e9f8],
    [0x416c8f6dbbddcf40, 0x40f3cbe8de1cc1ee, 0x406b6590ca5eb377],
    [0x416cb720fbdcd98d, 0x40f3e761885b1014, 0x406bb45d17fe0343],
    [0x416cdf0b73acbbca, 0x40f40318936910c7, 0x406bb679274eda35],
    [0x416d072d6c5c1b60, 0x40f41edfe8462e76, 0x406c0044f81e0d9f],
    [0x416d2f872bf3ec32, 0x40f43ae042c807f4, 0x406bff3324d76b59],
    [0x416d5819046b1ed8, 0x40f456df620a0ec1, 0x406c69881505c43f],
    [0x416d80e32c8424e6, 0x40f47346d5237353, 0x406c69b9fa19f5ed],
    [0x416da9e623f3c824, 0x40f48fa0f6aac450, 0x406ca58b83ace47d],
    [0x416dd3220dc4f3c0, 0x40f4ac4456c0a211, 0x406cacd699196566],
    [0x416dfc975426a716, 0x40f4c900a23e9520, 0x406ce65268e7aabf],
    [0x416e26463bdece9b, 0x40f4e5e8bbac42c4, 0x406ce5a8b982ee9c],
    [0x416e502f04a1c05c, 0x40f502df575d265a, 0x406d50bb76135190],
    [0x416e7a5213f60538, 0x40f52030287e8489, 0x406d4f456d458028],
    [0x416ea4afc3f27c3d, 0x40f53d80d5b628d3, 0x406d8da7e59b794b],
    [0x416ecf4853c8355c, 0x40f55b1049d8a23d, 0x406d8f18c22a2d57],
    [0x416efa1c146be4d9, 0x40f5789ee3472750, 0x406df9e8d49533b0],
    [0x416f252b4bbd7df8, 0x40f5969860343925, 0x406df7204e0e9d52],
    [0x416f50767b9cfb0a, 0x40f5b48175d72383, 0x406e449328f90c3e],
    [0x416f7bfdc3444982, 0x40f5d2c92231a10d, 0x406e4593c3e6e0e7],
    [0x416fa7c1a42b8284, 0x40f5f0ffbb5f0244, 0x406ea0673e6a47c5],
    [0x416fd3c2437d02f2, 0x40f60fa1938c4bd7, 0x406e9c118204b505],
];
