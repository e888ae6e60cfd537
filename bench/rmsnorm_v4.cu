// CUDA C equivalent of kernels/rmsnorm_v4.kir: persistent RMSNorm over f16 rows,
// out[t, :] = f16(x[t, :] * rsqrt(mean(x[t, :]^2) + 1e-6)), 8 halves per 16-byte access (uint4);
// block c handles tokens c, c + G, ...; the warp sums go to alternating halves of red (token
// parity), one barrier per token. The head (halves before the row's first multiple of 8) and the
// tail (after its last) are taken one element per thread. input and output 16-byte aligned.
//
// NVRTC 12.9 has no built-in cuda_fp16.h (see rmsnorm.cu): the pieces used are defined here under
// the header's names, with the header's inline PTX.
struct __align__(2) __half {
    unsigned short x;
};
__device__ __forceinline__ float __half2float(__half a) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(a.x));
    return f;
}
__device__ __forceinline__ __half __float2half_rn(float a) {
    __half r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.x) : "f"(a));
    return r;
}

__device__ __forceinline__ float rsqrt_approx(float x) {
    float r;
    asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ float warp_sum(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 16));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 8));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 4));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 2));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 1));
    return v;
}

__device__ __forceinline__ float lo_half(unsigned w) {
    __half h;
    h.x = (unsigned short)w;
    return __half2float(h);
}
__device__ __forceinline__ float hi_half(unsigned w) {
    __half h;
    h.x = (unsigned short)(w >> 16);
    return __half2float(h);
}

// x^2 of the two halves of a word added to acc (low half first)
__device__ __forceinline__ float sq2(unsigned w, float acc) {
    float xl = lo_half(w), xh = hi_half(w);
    return __fmaf_rn(xh, xh, __fmaf_rn(xl, xl, acc));
}

__device__ __forceinline__ unsigned norm2(unsigned w, float inv) {
    unsigned short ol = __float2half_rn(__fmul_rn(lo_half(w), inv)).x;
    unsigned short oh = __float2half_rn(__fmul_rn(hi_half(w), inv)).x;
    return (unsigned)ol | ((unsigned)oh << 16);
}

extern "C" __global__ void rmsnorm_v4(const __half* input, __half* output, unsigned num_tokens, unsigned hidden) {
    __shared__ float red[64];
    unsigned tid = threadIdx.x, nt = blockDim.x;
    unsigned lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
    const uint4* in4 = reinterpret_cast<const uint4*>(input);
    uint4* out4 = reinterpret_cast<uint4*>(output);
    float hf = __uint2float_rn(hidden);
    unsigned par = 0;
    // block-uniform exit: token depends only on blockIdx, gridDim and the iteration
    for (unsigned token = blockIdx.x; token < num_tokens; token += gridDim.x, par ^= 32) {
        unsigned base = token * hidden, end = base + hidden;
        unsigned a = min((base + 7) & ~7u, end);
        unsigned b = max(end & ~7u, a);
        unsigned nhead = a - base, ntail = end - b;
        unsigned ca = a >> 3, cb = b >> 3;
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        if (tid < nhead) {
            float hx = __half2float(input[base + tid]);
            a0 = __fmul_rn(hx, hx);
        }
        if (tid < ntail) {
            float tx = __half2float(input[b + tid]);
            a1 = __fmul_rn(tx, tx);
        }
        for (unsigned c = ca + tid; c < cb; c += nt) {
            uint4 v = in4[c];
            a0 = sq2(v.x, a0);
            a1 = sq2(v.y, a1);
            a2 = sq2(v.z, a2);
            a3 = sq2(v.w, a3);
        }
        float w = warp_sum(__fadd_rn(__fadd_rn(a0, a1), __fadd_rn(a2, a3)));
        if (lane == 0) red[par + warp] = w;
        __syncthreads();
        float total = warp_sum(lane < nw ? red[par + lane] : 0.0f);
        float inv = rsqrt_approx(__fadd_rn(__fdiv_rn(total, hf), 1e-6f));
        if (tid < nhead) {
            unsigned i = base + tid;
            output[i] = __float2half_rn(__fmul_rn(__half2float(input[i]), inv));
        }
        if (tid < ntail) {
            unsigned i = b + tid;
            output[i] = __float2half_rn(__fmul_rn(__half2float(input[i]), inv));
        }
        for (unsigned c = ca + tid; c < cb; c += nt) {
            uint4 v = in4[c];
            uint4 o;
            o.x = norm2(v.x, inv);
            o.y = norm2(v.y, inv);
            o.z = norm2(v.z, inv);
            o.w = norm2(v.w, inv);
            out4[c] = o;
        }
    }
}
