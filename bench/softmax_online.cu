// CUDA C equivalent of kernels/softmax_online.kir: row softmax, f32, with an online max and sum
// (one reading pass for the statistics, float4 loads), then a writing pass (float4 stores).
// softmax_online: one block per row, B a multiple of 32; the warps' (m, s) pairs meet in shared
// memory and every warp combines them with the same butterfly. softmax_warp_rows: each warp owns
// a row (row = blockIdx.x * (B / 32) + warp), no shared memory, no barrier.
// The head (elements before the row's first multiple of 4) and the tail (after its last) are taken
// one element per thread with scalar accesses; x and y 16-byte aligned.
__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

#define NINF __int_as_float(0xff800000)

// the sum of one element's pair (v, s): 1 for a finite v, 0 for -inf, NaN for NaN
__device__ __forceinline__ float one_s(float v) {
    float ref = v == NINF ? 0.0f : v;
    return ex2_approx(__fmul_rn(__fsub_rn(v, ref), 1.442695f));
}

// the sum of a quad's pair (m4, s4)
__device__ __forceinline__ float quad_s(float4 v, float m4) {
    float ref = m4 == NINF ? 0.0f : m4;
    float e0 = ex2_approx(__fmul_rn(__fsub_rn(v.x, ref), 1.442695f));
    float e1 = ex2_approx(__fmul_rn(__fsub_rn(v.y, ref), 1.442695f));
    float e2 = ex2_approx(__fmul_rn(__fsub_rn(v.z, ref), 1.442695f));
    float e3 = ex2_approx(__fmul_rn(__fsub_rn(v.w, ref), 1.442695f));
    return __fadd_rn(__fadd_rn(e0, e1), __fadd_rn(e2, e3));
}

// the sum of (m, s) combined with (om, os); the max is fmaxf(m, om)
__device__ __forceinline__ float ms_sum(float m, float s, float om, float os) {
    float hi = fmaxf(m, om), lo = fminf(m, om);
    float ref = hi == NINF ? 0.0f : hi;
    float r = ex2_approx(__fmul_rn(__fsub_rn(lo, ref), 1.442695f));
    bool mine = m >= om;
    float shi = mine ? s : os;
    float slo = mine ? os : s;
    return __fmaf_rn(slo, r, shi);
}

__device__ __forceinline__ float normalize(float x, float bm, float bs) {
    return __fdiv_rn(ex2_approx(__fmul_rn(__fsub_rn(x, bm), 1.442695f)), bs);
}

struct Row {
    unsigned base, b, nhead, ntail, qa, qb;
};

__device__ __forceinline__ Row row_bounds(unsigned row, unsigned cols) {
    Row r;
    r.base = row * cols;
    unsigned end = r.base + cols;
    unsigned a = min((r.base + 3) & ~3u, end);
    r.b = max(end & ~3u, a);
    r.nhead = a - r.base;
    r.ntail = end - r.b;
    r.qa = a >> 2;
    r.qb = r.b >> 2;
    return r;
}

// this thread's pair over its elements of the row: head, tail, quads t, t + stride, ...
__device__ __forceinline__ void row_ms(const float* x, const Row& r, unsigned t, unsigned stride, float& m, float& s) {
    m = NINF;
    s = 0.0f;
    if (t < r.nhead) {
        float hv = x[r.base + t];
        m = hv;
        s = one_s(hv);
    }
    if (t < r.ntail) {
        float tv = x[r.b + t];
        float ts = one_s(tv);
        float mn = fmaxf(m, tv);
        s = ms_sum(m, s, tv, ts);
        m = mn;
    }
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (unsigned q = r.qa + t; q < r.qb; q += stride) {
        float4 v = x4[q];
        float m4 = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
        float s4 = quad_s(v, m4);
        float mn = fmaxf(m, m4);
        s = ms_sum(m, s, m4, s4);
        m = mn;
    }
}

// butterfly over lane distances 16, 8, 4, 2, 1: every lane gets the warp's pair
__device__ __forceinline__ void warp_ms(float& m, float& s) {
    for (int d = 16; d >= 1; d >>= 1) {
        float om = __shfl_xor_sync(0xffffffff, m, d);
        float os = __shfl_xor_sync(0xffffffff, s, d);
        float mn = fmaxf(m, om);
        s = ms_sum(m, s, om, os);
        m = mn;
    }
}

__device__ __forceinline__ void row_write(const float* x, float* y, const Row& r, unsigned t, unsigned stride, float bm,
                                          float bs) {
    if (t < r.nhead) {
        unsigned hi = r.base + t;
        y[hi] = normalize(x[hi], bm, bs);
    }
    if (t < r.ntail) {
        unsigned ti = r.b + t;
        y[ti] = normalize(x[ti], bm, bs);
    }
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (unsigned q = r.qa + t; q < r.qb; q += stride) {
        float4 v = x4[q];
        float4 o;
        o.x = normalize(v.x, bm, bs);
        o.y = normalize(v.y, bm, bs);
        o.z = normalize(v.z, bm, bs);
        o.w = normalize(v.w, bm, bs);
        y4[q] = o;
    }
}

extern "C" __global__ void softmax_online(const float* x, float* y, unsigned rows, unsigned cols) {
    __shared__ float redm[32];
    __shared__ float reds[32];
    unsigned row = blockIdx.x;
    if (row < rows) {  // block-uniform
        unsigned tid = threadIdx.x, nt = blockDim.x;
        unsigned lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
        Row r = row_bounds(row, cols);
        float m, s;
        row_ms(x, r, tid, nt, m, s);
        warp_ms(m, s);
        if (lane == 0) {
            redm[warp] = m;
            reds[warp] = s;
        }
        __syncthreads();
        // every warp combines the nw warp pairs with the same butterfly
        float pm = NINF, ps = 0.0f;
        if (lane < nw) {
            pm = redm[lane];
            ps = reds[lane];
        }
        warp_ms(pm, ps);
        row_write(x, y, r, tid, nt, pm, ps);
    }
}

extern "C" __global__ void softmax_warp_rows(const float* x, float* y, unsigned rows, unsigned cols) {
    unsigned nw = blockDim.x >> 5;
    unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    unsigned row = blockIdx.x * nw + warp;
    if (row < rows) {  // warp-uniform
        Row r = row_bounds(row, cols);
        float m, s;
        row_ms(x, r, lane, 32, m, s);
        warp_ms(m, s);
        row_write(x, y, r, lane, 32, m, s);
    }
}
