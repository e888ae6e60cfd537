//! The vector, tensor-core and async-copy instructions ([`XOp::Ext`], [`XOp::CpCommit`],
//! [`XOp::CpWait`]), executed for the active lanes of a warp: kept apart from the scalar
//! instructions of [`super`], whose hot loop they do not touch.
//!
//! Guarantees:
//! - Vectors are bits: `vec`, `extract` and `insert` move element `i` of `b` bits to or from bits
//!   `i·b..(i+1)·b` of the value (a 128-bit value's bits 64..128 in its high slot, see
//!   `crate::prog`).
//! - `load.vN` / `store.vN` are one access of N elements: each lane's whole access is located
//!   first — in bounds, and its address a multiple of its size (a shared declaration aligned to
//!   less than that is misaligned whatever the offset: only the declared alignment is known of the
//!   GPU's layout) — else an out-of-bounds or misaligned fault naming the byte offset (and, in
//!   shared memory, the address) and the alignment needed. Then every element goes through the
//!   scalar accesses' checks (in-flight copies, races, uninitialized reads) in order, lanes in
//!   lane order.
//! - `mma` and `ldmatrix` need all 32 lanes of the warp active, else a divergent-collective fault
//!   naming where the missing lanes are (as a full-mask `shfl`). `mma` computes
//!   `crate::fragments::mma` under `Options::tensor_cores`. `ldmatrix` reads row `r` of matrix
//!   `j` at the address of lane `8j + r` (16 bytes, 16-byte aligned, in shared memory), as that
//!   lane's read for race detection, then distributes the rows by `crate::fragments`.
//! - `cp.async` (per lane): the destination (shared) and the source (global) are each aligned to
//!   the copy's size; the destination lies in bounds, the source's first `src_bytes` too (none
//!   when it is 0: the source is then not read and only its alignment is checked); `src_bytes`
//!   above the copy's size is an out-of-bounds fault. The source is read when the copy is issued
//!   (whole elements: race detection sees the element holding the last byte read as read), the
//!   rest of the copy is zeros; the destination is *in flight* until the issuing thread's
//!   `cp.async.wait n` leaves at most `n` of its later committed groups pending (copies not yet
//!   committed are not waited for). In flight, any access to it (another copy's too) is an
//!   async-copy fault naming the copy and its thread. Race detection judges the destination as
//!   written by the issuing thread when it is issued and again when it completes; the completion
//!   writes through the scalar path (races, initialization) as a plain write of that thread at the
//!   wait, element by element. A thread that executes `ret` with a copy in flight is a fault
//!   ("never waited for").
//! - Enclosures (with `ENC`) are kept per vector element, in the rows of the enclosure program's
//!   element slots (`crate::prog`, [`ElSlots`]): `vec` gives element `i` operand `i`'s
//!   enclosure, `extract` the element's, `insert` replaces one; `load.vN` gives each element the
//!   enclosure of its bytes in memory, `store.vN` gives each element's bytes the element's
//!   enclosure (block arguments and a function's `ret` carry every element's, `crate::exec`). An
//!   element of an integer type is exact or unknown (a range met there becomes unknown at this
//!   instruction). Fragments are coarser, by choice: an `mma` result (every element, every lane)
//!   is exact when every element of its three operands in all 32 lanes is, and otherwise unknown
//!   (an unknown input's cause kept; a range becomes unknown at the `mma`); an `ldmatrix` result
//!   likewise over every row read. A `cp.async` keeps the enclosure of each source element and
//!   gives it to the destination element at the same place and of the same size when the copy
//!   completes (a destination element of another shape than the source's overlapping elements,
//!   or holding a partly read element, is unknown unless those are exact; zero-filled bytes are
//!   exact). An address, a copy's source size, whose enclosure is not exact makes the launch's
//!   enclosures unusable.

use super::{lanes, Access, AsyncCopy, LaunchCtx, Worker};
use crate::enclose::{Enc, MemEnc, Why};
use crate::error::{coords, FaultKind, InterpError};
use crate::fragments::{self, MmaLane};
use crate::mem::{self, AccessFault};
use crate::prog::{ElSlots, ExtKind, MemAccess, XExt, XInst, NO_SLOT};
use crate::race::{self, tag, Kind};
use kir_ir::op::Op;
use kir_ir::types::{AddrSpace, ScalarType};
use kir_ir::Span;

/// The enclosure rows of a value's elements (enclosure program): element 0's is the value's row,
/// element `k`'s that of its element slot `k - 1` ([`ElSlots`]); a scalar has one.
#[derive(Clone, Copy)]
struct ElRows {
    rows: [usize; 4],
    n: usize,
}

impl ElRows {
    /// The elements of the value in row `lo` (registers at `base`) with element slots `el`.
    fn new(base: usize, lo: usize, el: &ElSlots) -> ElRows {
        let mut rows = [lo; 4];
        let mut n = 1;
        for &s in el.iter().take_while(|&&s| s != NO_SLOT) {
            rows[n] = base + s as usize;
            n += 1;
        }
        ElRows { rows, n }
    }

    /// Element `k`'s row (element 0's when the program has no element slots: never in a launch
    /// with enclosures, whose programs have them).
    fn get(&self, k: usize) -> usize {
        if k < self.n {
            self.rows[k]
        } else {
            self.rows[0]
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.rows[..self.n].iter().copied()
    }
}

/// The enclosure of an element of scalar type `ty`: a range only for a float (the bits of an
/// integer or bit pattern are exact or unknown; unknown here, at `at`).
fn elem_enc(ty: ScalarType, e: Enc, at: Span) -> Enc {
    match e {
        Enc::Range { .. } if !ty.is_float() => Enc::Unknown { at, why: Why::Bits },
        e => e,
    }
}

/// The element type of `vec`, `extract` and `insert` (`u32`, a bit pattern, for anything else).
fn elem_type(op: &Op) -> ScalarType {
    match *op {
        Op::VecBuild(_, t) | Op::VecExtract(_, t) | Op::VecInsert(_, t) => t,
        _ => ScalarType::U32,
    }
}

/// The low `bits` bits.
fn low(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

impl Worker {
    /// The 128-bit value of lane `l` in row `lo` and, if any, the high row `hi`.
    fn get_wide(&self, lo: usize, hi: Option<usize>, l: usize) -> u128 {
        let v = self.regs[lo][l] as u128;
        match hi {
            Some(h) => v | (self.regs[h][l] as u128) << 64,
            None => v,
        }
    }

    /// Writes lane `l` of a (possibly 128-bit) result.
    fn put_wide(&mut self, lo: Option<usize>, hi: Option<usize>, l: usize, v: u128) {
        if let Some(r) = lo {
            self.regs[r][l] = v as u64;
        }
        if let Some(h) = hi {
            self.regs[h][l] = (v >> 64) as u64;
        }
    }

    /// With enclosures: the enclosure of a value made of lane `l` of `rows` (exact when they all
    /// are; else the first unknown one's, or unknown here).
    fn enc_made_of(&self, rows: &[usize], l: usize, at: Span) -> Enc {
        let mut out = Enc::Exact;
        for &r in rows {
            match self.enc[r][l] {
                Enc::Exact => {}
                u @ Enc::Unknown { .. } => return u,
                Enc::Range { .. } => out = Enc::Unknown { at, why: Why::Inexact },
            }
        }
        out
    }

    /// With enclosures: sets the enclosure of every element of lane `l` of the vector whose
    /// element rows are `rows`.
    fn set_enc_all(&mut self, rows: &ElRows, l: usize, e: Enc) {
        for r in rows.iter() {
            self.enc[r][l] = e;
        }
    }

    /// With enclosures: records that an address (or a copy's size) in `rows` was not exact.
    fn enc_addresses(&self, cx: &LaunchCtx, rows: &[usize], mask: u32, at: Span) {
        for &row in rows {
            if let Some(e) = self.enc_inexact(row, mask) {
                self.enc_unusable(cx, at, "an address", e);
            }
        }
    }

    /// The enclosure of `size` bytes at byte `byte` of region `region` of `space`.
    fn enc_load(&self, cx: &LaunchCtx, space: AddrSpace, region: usize, byte: usize, size: u32, at: Span) -> Enc {
        match space {
            AddrSpace::Global => match cx.enc.and_then(|e| e.global.get(region)) {
                Some(m) => m.lock().unwrap_or_else(|p| p.into_inner()).load(byte, size, at),
                None => Enc::Exact,
            },
            AddrSpace::Shared => self.sh_enc.load(cx.shared_start[region] + byte, size, at),
        }
    }

    /// Sets the enclosure of `size` bytes at byte `byte` of region `region` of `space`.
    #[allow(clippy::too_many_arguments)]
    fn enc_store(&mut self, cx: &LaunchCtx, space: AddrSpace, region: usize, byte: usize, size: u32, e: Enc) {
        match space {
            AddrSpace::Global => {
                if let Some(m) = cx.enc.and_then(|x| x.global.get(region)) {
                    m.lock().unwrap_or_else(|p| p.into_inner()).store(byte, size, e);
                }
            }
            AddrSpace::Shared => self.sh_enc.store(cx.shared_start[region] + byte, size, e),
        }
    }

    /// Executes a vector, tensor-core or async-copy instruction for the lanes in `mask` of warp
    /// `w`, whose registers start at row `base`.
    pub(super) fn exec_ext(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        base: usize,
        mask: u32,
        inst: &XInst,
        x: &XExt,
    ) -> Result<(), InterpError> {
        let row = |s: u32| (s != NO_SLOT).then(|| base + s as usize);
        let arg = |i: usize| base + x.args[i] as usize;
        let arg_hi = |i: usize| row(x.hi[i]);
        let (res, res_hi) = (row(inst.res), row(x.res_hi));
        let enc = !self.enc.is_empty();
        let span = inst.span;
        // With enclosures, the enclosure rows of each operand's and the result's elements.
        let arg_els = |i: usize| ElRows::new(base, arg(i), &x.el[i]);
        let res_els = res.map(|r| ElRows::new(base, r, &x.res_el));
        match x.kind {
            ExtKind::Build { bits } => {
                let n = x.nargs as usize;
                for l in lanes(mask) {
                    let mut v = 0u128;
                    for i in 0..n {
                        v |= ((self.regs[arg(i)][l] & low(bits)) as u128) << (i as u32 * bits);
                    }
                    self.put_wide(res, res_hi, l, v);
                }
                if let (true, Some(out)) = (enc, res_els) {
                    // Element `i` is operand `i`.
                    let ty = elem_type(&x.op);
                    for i in 0..n {
                        let (src, dst) = (arg(i), out.get(i));
                        for l in lanes(mask) {
                            self.enc[dst][l] = elem_enc(ty, self.enc[src][l], span);
                        }
                    }
                }
            }
            ExtKind::Extract { bits, lane } => {
                for l in lanes(mask) {
                    let v = self.get_wide(arg(0), arg_hi(0), l);
                    let e = (v >> (lane * bits)) as u64 & low(bits);
                    self.put_wide(res, None, l, e as u128);
                }
                if let (true, Some(r)) = (enc, res) {
                    // The element's own enclosure.
                    let src = arg_els(0).get(lane as usize);
                    for l in lanes(mask) {
                        self.enc[r][l] = self.enc[src][l];
                    }
                }
            }
            ExtKind::Insert { bits, lane } => {
                let m = (low(bits) as u128) << (lane * bits);
                for l in lanes(mask) {
                    let v = self.get_wide(arg(0), arg_hi(0), l);
                    let e = ((self.regs[arg(2)][l] & low(bits)) as u128) << (lane * bits);
                    self.put_wide(res, res_hi, l, (v & !m) | e);
                }
                if let (true, Some(out)) = (enc, res_els) {
                    // The vector's elements, element `lane` replaced by the scalar's.
                    let (from, ty) = (arg_els(0), elem_type(&x.op));
                    for k in 0..out.n {
                        let src = if k == lane as usize { arg(2) } else { from.get(k) };
                        let dst = out.get(k);
                        for l in lanes(mask) {
                            self.enc[dst][l] = elem_enc(ty, self.enc[src][l], span);
                        }
                    }
                }
            }
            ExtKind::Load { acc, n } => {
                let len = acc.size * n;
                if enc {
                    self.enc_addresses(cx, &[arg(0), arg(1)], mask, span);
                }
                for l in lanes(mask) {
                    let (p, i) = (self.regs[arg(0)][l], self.regs[arg(1)][l]);
                    let (region, byte) = self.locate_ext(cx, w, l, span, &x.op, &acc, p, i, len, len, "from")?;
                    let mut v = 0u128;
                    for k in 0..n {
                        let at = byte + (k * acc.size) as usize;
                        let bits = self.access_at(cx, w, l, span, &acc, region, at, Access::Read)?;
                        v |= (bits as u128) << (k * acc.size * 8);
                        if let (true, Some(out)) = (enc, res_els) {
                            // Each element: the enclosure of its bytes in memory.
                            let e = self.enc_load(cx, acc.space, region, at, acc.size, span);
                            self.enc[out.get(k as usize)][l] = elem_enc(acc.elem, e, span);
                        }
                    }
                    self.put_wide(res, res_hi, l, v);
                }
            }
            ExtKind::Store { acc, n } => {
                let len = acc.size * n;
                if enc {
                    self.enc_addresses(cx, &[arg(0), arg(1)], mask, span);
                }
                for l in lanes(mask) {
                    let (p, i) = (self.regs[arg(0)][l], self.regs[arg(1)][l]);
                    let (region, byte) = self.locate_ext(cx, w, l, span, &x.op, &acc, p, i, len, len, "to")?;
                    let v = self.get_wide(arg(2), arg_hi(2), l);
                    for k in 0..n {
                        let bits = (v >> (k * acc.size * 8)) as u64 & low(acc.size * 8);
                        let at = byte + (k * acc.size) as usize;
                        self.access_at(cx, w, l, span, &acc, region, at, Access::Write(bits))?;
                    }
                    if enc {
                        // Each element's bytes get its own enclosure.
                        let from = arg_els(2);
                        for k in 0..n {
                            let e = self.enc[from.get(k as usize)][l];
                            self.enc_store(cx, acc.space, region, byte + (k * acc.size) as usize, acc.size, e);
                        }
                    }
                }
            }
            ExtKind::Mma(kind) => {
                self.whole_warp(cx, w, mask, span, &x.op)?;
                let mut frags = [MmaLane::default(); 32];
                for (l, f) in frags.iter_mut().enumerate() {
                    let a = self.get_wide(arg(0), arg_hi(0), l);
                    let b = self.regs[arg(1)][l];
                    let c = self.get_wide(arg(2), arg_hi(2), l);
                    f.a = std::array::from_fn(|i| (a >> (32 * i)) as u32);
                    f.b = [b as u32, (b >> 32) as u32];
                    f.c = std::array::from_fn(|i| (c >> (32 * i)) as u32);
                }
                let d = fragments::mma(cx.opts.tensor_cores, kind, &frags);
                for (l, out) in d.iter().enumerate() {
                    let v = out.iter().enumerate().fold(0u128, |v, (i, &x)| v | (x as u128) << (32 * i));
                    self.put_wide(res, res_hi, l, v);
                }
                if let (true, Some(out)) = (enc, res_els) {
                    // Every output depends on lanes all over the warp: the elements of all three
                    // operands in all lanes.
                    let rows: Vec<usize> = (0..3).flat_map(|i| arg_els(i).iter().collect::<Vec<_>>()).collect();
                    let e =
                        (0..32).map(|l| self.enc_made_of(&rows, l, span)).find(|e| !e.is_exact()).unwrap_or(Enc::Exact);
                    for l in 0..32 {
                        self.set_enc_all(&out, l, e);
                    }
                }
            }
            ExtKind::Ldmatrix { acc, num, trans } => {
                self.whole_warp(cx, w, mask, span, &x.op)?;
                let count = num.count();
                if enc {
                    let addr_lanes = if count == 4 { u32::MAX } else { (1u32 << (8 * count)) - 1 };
                    self.enc_addresses(cx, &[arg(0), arg(1)], addr_lanes, span);
                }
                let mut mats = [[[0u16; 8]; 8]; 4];
                let mut e = Enc::Exact;
                for (j, mat) in mats.iter_mut().enumerate().take(count) {
                    for (r, row) in mat.iter_mut().enumerate() {
                        let t = 8 * j + r;
                        let (p, i) = (self.regs[arg(0)][t], self.regs[arg(1)][t]);
                        let (region, byte) = self.locate_ext(cx, w, t, span, &x.op, &acc, p, i, 16, 16, "row from")?;
                        for (c, v) in row.iter_mut().enumerate() {
                            *v = self.access_at(cx, w, t, span, &acc, region, byte + 2 * c, Access::Read)? as u16;
                        }
                        if enc && e.is_exact() {
                            e = match self.enc_load(cx, AddrSpace::Shared, region, byte, 16, span) {
                                Enc::Range { .. } => Enc::Unknown { at: span, why: Why::Inexact },
                                other => other,
                            };
                        }
                    }
                }
                for l in 0..32 {
                    let v = (0..count)
                        .fold(0u128, |v, j| v | (fragments::ldmatrix_lane(&mats[j], trans, l) as u128) << (32 * j));
                    self.put_wide(res, res_hi, l, v);
                    if let (true, Some(out)) = (enc, res_els) {
                        self.set_enc_all(&out, l, e);
                    }
                }
            }
            ExtKind::CpAsync { dst, src, size } => {
                if enc {
                    self.enc_addresses(cx, &[arg(0), arg(1), arg(2), arg(3), arg(4)], mask, span);
                }
                for l in lanes(mask) {
                    self.cp_async(cx, w, l, span, x, &dst, &src, size, base)?;
                }
            }
        }
        Ok(())
    }

    /// Lane `l` of warp `w` issues the `cp.async` `x` (registers at `base`).
    #[allow(clippy::too_many_arguments)]
    fn cp_async(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        span: Span,
        x: &XExt,
        dst: &MemAccess,
        src: &MemAccess,
        size: u32,
        base: usize,
    ) -> Result<(), InterpError> {
        let reg = |s: &Self, i: usize| s.regs[base + x.args[i] as usize][l];
        let tid = w * 32 + l;
        let n = reg(self, 4) as u32;
        if n > size {
            return Err(InterpError::fault(
                FaultKind::OutOfBounds,
                format!("`{}` copies {size} bytes, but its source size is {n}", x.op),
            )
            .at(span, "source size larger than the copy")
            .in_thread(self.ctaid, cx.tid_of(tid as u32))
            .with_note(format!("the source size is how many of the {size} bytes come from global memory (the rest are zeros): 0 to {size}")));
        }
        let (dr, db) =
            self.locate_ext(cx, w, l, span, &x.op, dst, reg(self, 0), reg(self, 1), size, size, "destination in")?;
        // Whole source elements: the one holding the last byte read is read.
        let read = n.div_ceil(src.size) * src.size;
        let (sr, sb) =
            self.locate_ext(cx, w, l, span, &x.op, src, reg(self, 2), reg(self, 3), read, size, "source from")?;
        let at = cx.shared_start[dr] + db;
        if let Some(k) = (at..at + size as usize).find(|&b| self.sh_flight[b] != 0) {
            let verb = "`cp.async` into";
            return Err(self.in_flight_error(cx, w, l, span, dr, db, size, verb, k));
        }
        // The destination is written from now on, for race detection.
        if !self.sh_race.is_empty() {
            let shift = cx.prog.race_shift[1];
            let me = tag::make(self.gen as u64, self.epoch, tid as u64);
            for k in 0..size / dst.size {
                let byte = db + (k * dst.size) as usize;
                let first = self.sh_race_start[dr] + (byte >> shift);
                if let Some(c) =
                    race::shared_access(&mut self.sh_race, first, dst.size, shift, me, Kind::Write, dst.site)
                {
                    return Err(self.race_error(cx, w, l, span, dst, dr, byte, Kind::Write, c));
                }
            }
        }
        let mut data = [0u8; 16];
        let mut enc = MemEnc::default();
        for k in 0..read / src.size {
            let byte = sb + (k * src.size) as usize;
            let bits = self.access_at(cx, w, l, span, src, sr, byte, Access::Read)?;
            let at = (k * src.size) as usize;
            data[at..at + src.size as usize].copy_from_slice(&bits.to_le_bytes()[..src.size as usize]);
            if !self.enc.is_empty() {
                // Each source element's enclosure, at its offset in the copy; an element only
                // partly read (the rest zeros) is new bits.
                let e = match self.enc_load(cx, AddrSpace::Global, sr, byte, src.size, span) {
                    e if at + src.size as usize > n as usize && !e.is_exact() => {
                        Enc::Unknown { at: span, why: Why::Bits }
                    }
                    e => e,
                };
                enc.store(at, src.size, e);
            }
        }
        data[n as usize..].fill(0);
        let group = self.commits[tid];
        self.copies[tid].push(AsyncCopy { group, region: dr, byte: db, size, data, dst: *dst, span, enc });
        self.sh_flight[at..at + size as usize].fill(tid as u32 + 1);
        self.copies_in_flight += 1;
        Ok(())
    }

    /// `cp.async.commit` by the lanes in `mask` of warp `w`.
    pub(super) fn cp_commit(&mut self, w: usize, mask: u32) {
        for l in lanes(mask) {
            self.commits[w * 32 + l] += 1;
        }
    }

    /// `cp.async.wait n` by the lanes in `mask` of warp `w`: each completes its copies of every
    /// committed group but its `n` most recent, in issue order.
    pub(super) fn cp_wait(
        &mut self,
        cx: &LaunchCtx,
        w: usize,
        mask: u32,
        inst: &XInst,
        n: u32,
    ) -> Result<(), InterpError> {
        for l in lanes(mask) {
            let tid = w * 32 + l;
            let limit = self.commits[tid].saturating_sub(n);
            if self.copies[tid].first().is_none_or(|c| c.group >= limit) {
                continue;
            }
            let all = std::mem::take(&mut self.copies[tid]);
            let (done, pending): (Vec<AsyncCopy>, Vec<AsyncCopy>) = all.into_iter().partition(|c| c.group < limit);
            self.copies[tid] = pending;
            for c in done {
                let at = cx.shared_start[c.region] + c.byte;
                self.sh_flight[at..at + c.size as usize].fill(0);
                self.copies_in_flight -= 1;
                let esize = c.dst.size;
                for k in 0..c.size / esize {
                    let off = (k * esize) as usize;
                    let mut b = [0u8; 8];
                    b[..esize as usize].copy_from_slice(&c.data[off..off + esize as usize]);
                    let bits = u64::from_le_bytes(b);
                    self.access_at(cx, w, l, c.span, &c.dst, c.region, c.byte + off, Access::Write(bits)).map_err(
                        |e| e.with_label(inst.span, "the copy completes here, at its thread's `cp.async.wait`"),
                    )?;
                }
                if !self.enc.is_empty() {
                    // Each destination element: the enclosure of its bytes in the source (a
                    // source element of the same place and size: its own; of another shape:
                    // unknown; zeros and exact bytes: exact).
                    for k in 0..c.size / esize {
                        let off = (k * esize) as usize;
                        let e = c.enc.load(off, esize, c.span);
                        self.enc_store(cx, AddrSpace::Shared, c.region, c.byte + off, esize, e);
                    }
                }
            }
        }
        Ok(())
    }

    /// The lanes in `mask` of warp `w` execute the kernel's `ret` at `span`: a fault if one of them
    /// still has a copy in flight.
    #[cold]
    pub(super) fn no_copies_left(&self, cx: &LaunchCtx, w: usize, mask: u32, span: Span) -> Result<(), InterpError> {
        for l in lanes(mask) {
            let tid = w * 32 + l;
            let Some(c) = self.copies[tid].first() else { continue };
            let who = coords(cx.tid_of(tid as u32));
            let name = cx.shared_names.get(c.region).map_or("?", String::as_str);
            return Err(InterpError::fault(
                FaultKind::AsyncCopyInFlight,
                format!(
                    "thread {who} exits with `cp.async.{}` never waited for: its copy into shared `@{name}` bytes {}..{} is still in flight",
                    c.size,
                    c.byte,
                    c.byte + c.size as usize
                ),
            )
            .at(span, "the thread exits here")
            .with_label(c.span, format!("thread {who} started the copy here"))
            .in_thread(self.ctaid, cx.tid_of(tid as u32))
            .with_note("wait for every copy before the thread ends (`cp.async.commit`, then `cp.async.wait 0`); the GPU may write the destination at any time until then"));
        }
        Ok(())
    }

    /// The fault of an access (`verb`: "read of", ...) by lane `l` of warp `w` to shared bytes
    /// `byte..byte + size` of declaration `region`, of which the block's byte `k` is in flight.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn in_flight_error(
        &self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        span: Span,
        region: usize,
        byte: usize,
        size: u32,
        verb: &str,
        k: usize,
    ) -> InterpError {
        let me = w * 32 + l;
        let owner = self.sh_flight[k] as usize - 1;
        let copy = self.copies.get(owner).and_then(|cs| {
            cs.iter().find(|c| {
                let at = cx.shared_start[c.region] + c.byte;
                (at..at + c.size as usize).contains(&k)
            })
        });
        let name = cx.shared_names.get(region).map_or("?", String::as_str);
        let who =
            if owner == me { "this thread".to_string() } else { format!("thread {}", coords(cx.tid_of(owner as u32))) };
        let copy_size = copy.map_or(0, |c| c.size);
        let mut e = InterpError::fault(
            FaultKind::AsyncCopyInFlight,
            format!(
                "{verb} shared `@{name}` bytes {byte}..{} while `cp.async.{copy_size}` of {who} still has them in flight: wait for it with `cp.async.wait` (and a barrier for other threads)",
                byte + size as usize
            ),
        )
        .at(span, "accesses bytes a copy has not written yet")
        .in_thread(self.ctaid, cx.tid_of(me as u32));
        if let Some(c) = copy {
            e = e.with_label(c.span, format!("{who} started the copy here"));
        }
        e.with_note(
            "a `cp.async` writes its destination at some time before the issuing thread's `cp.async.wait` that covers its group; \
             other threads see the data after that wait and a barrier",
        )
    }

    /// A whole-warp instruction (`mma`, `ldmatrix`) executed by the lanes in `mask` only.
    fn whole_warp(&self, cx: &LaunchCtx, w: usize, mask: u32, span: Span, op: &Op) -> Result<(), InterpError> {
        if mask == u32::MAX {
            return Ok(());
        }
        let n = (!mask).count_ones();
        let msg = format!(
            "`{op}` needs all 32 lanes of warp {w}, but {n} lane{} {} not executing it",
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" }
        );
        Err(self.missing_lanes_fault(cx, w, mask, u32::MAX, span, msg))
    }

    /// Locates lane `l`'s access of `len` bytes at `ptr[idx]` (elements as `acc`), which must be
    /// aligned to `align` bytes: `(region, byte)`; else the fault. `dir` says how the access
    /// relates to the memory in messages ("from", "to", ...).
    #[allow(clippy::too_many_arguments)]
    fn locate_ext(
        &self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        span: Span,
        op: &Op,
        acc: &MemAccess,
        ptr: u64,
        idx_bits: u64,
        len: u32,
        align: u32,
        dir: &str,
    ) -> Result<(usize, usize), InterpError> {
        let lens: &[u64] = match acc.space {
            AddrSpace::Global => &cx.global.lens,
            AddrSpace::Shared => &cx.shared_lens,
        };
        let idx = mem::index_value(acc.idx_ty, idx_bits);
        let fault = match mem::locate_span(ptr, idx, acc.size, len, align, lens) {
            Ok((r, byte)) if acc.space == AddrSpace::Shared && cx.shared_align[r] < align as u64 => {
                AccessFault::Misaligned { region: r as u32 + 1, byte }
            }
            Ok((r, byte)) => return Ok((r, byte.max(0) as usize)),
            Err(f) => f,
        };
        Err(self.ext_fault(cx, w, l, span, op, acc, idx, len, align, dir, fault))
    }

    /// The out-of-bounds or misaligned fault of [`Self::locate_ext`].
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn ext_fault(
        &self,
        cx: &LaunchCtx,
        w: usize,
        l: usize,
        span: Span,
        op: &Op,
        acc: &MemAccess,
        idx: i128,
        len: u32,
        align: u32,
        dir: &str,
        f: AccessFault,
    ) -> InterpError {
        let thread = cx.tid_of((w * 32 + l) as u32);
        let e = match f {
            AccessFault::NoRegion(r) => InterpError::fault(
                FaultKind::OutOfBounds,
                format!("`{op}` {dir} an invalid {} pointer (region {r}) at index {idx}", acc.space),
            )
            .at(span, "invalid pointer"),
            AccessFault::OutOfBounds { region, byte } => {
                let r = region as usize - 1;
                let rlen = match acc.space {
                    AddrSpace::Global => cx.global.lens[r],
                    AddrSpace::Shared => cx.shared_lens[r],
                };
                InterpError::fault(
                    FaultKind::OutOfBounds,
                    format!(
                        "out-of-bounds {len}-byte `{op}` {dir} {} at byte offset {byte}",
                        Self::region_name(cx, acc, r)
                    ),
                )
                .at(span, format!("index {idx} is out of bounds"))
                .with_note(format!(
                    "the region holds {rlen} bytes; the access needs bytes {byte}..{}",
                    byte + len as i128
                ))
            }
            AccessFault::Misaligned { region, byte } => {
                let r = region as usize - 1;
                let what = Self::region_name(cx, acc, r);
                let e = match acc.space {
                    AddrSpace::Global => InterpError::fault(
                        FaultKind::Misaligned,
                        format!("misaligned {align}-byte `{op}` {dir} {what}: byte offset {byte} is not a multiple of {align}"),
                    )
                    .with_note(format!(
                        "an access must be aligned to its size (the GPU faults: \"misaligned address\"); buffers start 256-byte \
                         aligned, so the offset into the buffer must be a multiple of {align}"
                    )),
                    AddrSpace::Shared if cx.shared_align[r] < align as u64 => {
                        let name = cx.shared_names.get(r).map_or("?", String::as_str);
                        InterpError::fault(
                            FaultKind::Misaligned,
                            format!(
                                "misaligned {align}-byte `{op}` {dir} {what}: `@{name}` is aligned to only {} bytes, so byte \
                                 offset {byte} into it is no {align}-byte address",
                                cx.shared_align[r]
                            ),
                        )
                        .with_note(format!(
                            "declare it `align {align}`: the GPU's shared layout guarantees only the declared alignment"
                        ))
                    }
                    AddrSpace::Shared => {
                        let name = cx.shared_names.get(r).map_or("?", String::as_str);
                        let addr = cx.shared_start[r] as i128 + byte;
                        InterpError::fault(
                            FaultKind::Misaligned,
                            format!(
                                "misaligned {align}-byte `{op}` {dir} {what}: address {addr:#x} (byte offset {byte} into \
                                 `@{name}`) is not a multiple of {align}"
                            ),
                        )
                        .with_note("an access must be aligned to its size (the GPU faults: \"misaligned address\")")
                    }
                };
                e.at(span, "misaligned access")
            }
        };
        e.in_thread(self.ctaid, thread)
    }
}
