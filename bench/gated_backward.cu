// CUDA C equivalents of kernels/gated_backward.kir: {glu, reglu, swiglu, geglu} backward x {f32, f16,
// bf16} storage. The math is f32 throughout; loads convert exactly, stores round to nearest even.
// One template per activation, instantiated by three extern "C" kernels (the .kir spells each
// variant out; the PTX differs only in the load/store conversions).
//
// NVRTC 12.9 has no built-in cuda_fp16.h / cuda_bf16.h, and the benchmark compiles each file with no
// include path, so the few pieces used here are defined below under the headers' own names, with
// the same inline PTX as cuda_fp16.hpp / cuda_bf16.hpp (12.x) for sm_80 and sm_90.
struct __align__(2) __half {
    unsigned short x;
};
struct __align__(2) __nv_bfloat16 {
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
__device__ __forceinline__ float __bfloat162float(__nv_bfloat16 a) {
    float f;
#if __CUDA_ARCH__ >= 900
    asm("cvt.f32.bf16 %0, %1;" : "=f"(f) : "h"(a.x));
#else
    asm("mov.b32 %0, {0, %1};" : "=f"(f) : "h"(a.x));
#endif
    return f;
}
__device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(float a) {
    __nv_bfloat16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.x) : "f"(a));
    return r;
}

__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ float ld(const float* p, unsigned i) { return p[i]; }
__device__ __forceinline__ float ld(const __half* p, unsigned i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, unsigned i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, unsigned i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half* p, unsigned i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, unsigned i, float v) { p[i] = __float2bfloat16_rn(v); }

// dy is [rows, h]; x and dx are [rows, 2h]; thread i handles row i / h, column i % h.
template <typename T>
__device__ __forceinline__ void glu_backward(const T* x, const T* dy, T* dx, unsigned n, unsigned h) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned row = i / h;
        unsigned ia = row * h + i;  // row * 2h + col
        unsigned ib = ia + h;
        float a = ld(x, ia);
        float b = ld(x, ib);
        float g = ld(dy, i);
        float em = ex2_approx(__fmul_rn(b, -1.442695f));
        float ep = ex2_approx(__fmul_rn(b, 1.442695f));
        float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));   // sigma(b)
        float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));  // sigma(-b) = 1 - sigma(b)
        float da = __fmul_rn(g, s);
        float ga = __fmul_rn(g, a);
        float ssb = __fmul_rn(s, sb);
        float db = __fmul_rn(ga, ssb);
        st(dx, ia, da);
        st(dx, ib, db);
    }
}

template <typename T>
__device__ __forceinline__ void reglu_backward(const T* x, const T* dy, T* dx, unsigned n, unsigned h) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned row = i / h;
        unsigned ia = row * h + i;
        unsigned ib = ia + h;
        float a = ld(x, ia);
        float b = ld(x, ib);
        float g = ld(dy, i);
        bool pos = b > 0.0f;
        float gb = __fmul_rn(g, b);
        float ga = __fmul_rn(g, a);
        float da = pos ? gb : 0.0f;
        float db = pos ? ga : 0.0f;
        st(dx, ia, da);
        st(dx, ib, db);
    }
}

template <typename T>
__device__ __forceinline__ void swiglu_backward(const T* x, const T* dy, T* dx, unsigned n, unsigned h) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned row = i / h;
        unsigned ia = row * h + i;
        unsigned ib = ia + h;
        float a = ld(x, ia);
        float b = ld(x, ib);
        float g = ld(dy, i);
        float em = ex2_approx(__fmul_rn(b, -1.442695f));
        float ep = ex2_approx(__fmul_rn(b, 1.442695f));
        float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));   // sigma(b)
        float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));  // sigma(-b)
        float bs = __fmul_rn(b, s);                        // silu(b)
        float da = __fmul_rn(g, bs);
        float ga = __fmul_rn(g, a);
        float d = __fmaf_rn(bs, sb, s);                    // silu'(b) = s + b s (1 - s)
        float db = __fmul_rn(ga, d);
        st(dx, ia, da);
        st(dx, ib, db);
    }
}

template <typename T>
__device__ __forceinline__ void geglu_backward(const T* x, const T* dy, T* dx, unsigned n, unsigned h) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned row = i / h;
        unsigned ia = row * h + i;
        unsigned ib = ia + h;
        float a = ld(x, ia);
        float b = ld(x, ib);
        float g = ld(dy, i);
        // q = erfc(|b| / sqrt 2) / 2 = Phi(-|b|), Numerical Recipes erfcc
        float z = __fmul_rn(fabsf(b), 0.70710677f);
        float t = __fdiv_rn(1.0f, __fmaf_rn(z, 0.5f, 1.0f));
        float p = __fmaf_rn(t, 0.17087276f, -0.82215226f);
        p = __fmaf_rn(t, p, 1.4885159f);
        p = __fmaf_rn(t, p, -1.135204f);
        p = __fmaf_rn(t, p, 0.27886808f);
        p = __fmaf_rn(t, p, -0.18628806f);
        p = __fmaf_rn(t, p, 0.09678418f);
        p = __fmaf_rn(t, p, 0.37409195f);
        p = __fmaf_rn(t, p, 1.0000237f);
        p = __fmaf_rn(t, p, -1.2655122f);
        float b2 = __fmul_rn(b, b);
        float z2 = __fmul_rn(b2, 0.5f);  // z^2 = b^2 / 2, exact scaling
        float arg = __fsub_rn(p, z2);
        float ex = ex2_approx(__fmul_rn(arg, 1.442695f));
        float erfc = __fmul_rn(t, ex);
        float q = __fmul_rn(erfc, 0.5f);
        float oneq = __fsub_rn(1.0f, q);
        float Phi = b >= 0.0f ? oneq : q;  // NaN b: q is NaN
        // phi(b) = 2^(-b^2 log2(e) / 2) / sqrt(2 pi)
        float pe = ex2_approx(__fmul_rn(b2, -0.7213475f));
        float phi = __fmul_rn(pe, 0.3989423f);
        float bPhi = __fmul_rn(b, Phi);
        float da = __fmul_rn(g, bPhi);
        float ga = __fmul_rn(g, a);
        float d = __fmaf_rn(b, phi, Phi);
        float db = __fmul_rn(ga, d);
        st(dx, ia, da);
        st(dx, ib, db);
    }
}

extern "C" __global__ void glu_backward_f32(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    glu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void glu_backward_f16(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    glu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void glu_backward_bf16(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                             unsigned n, unsigned h) {
    glu_backward(x, dy, dx, n, h);
}

extern "C" __global__ void reglu_backward_f32(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    reglu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void reglu_backward_f16(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    reglu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void reglu_backward_bf16(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                               unsigned n, unsigned h) {
    reglu_backward(x, dy, dx, n, h);
}

extern "C" __global__ void swiglu_backward_f32(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    swiglu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void swiglu_backward_f16(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    swiglu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void swiglu_backward_bf16(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                                unsigned n, unsigned h) {
    swiglu_backward(x, dy, dx, n, h);
}

extern "C" __global__ void geglu_backward_f32(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    geglu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void geglu_backward_f16(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    geglu_backward(x, dy, dx, n, h);
}
extern "C" __global__ void geglu_backward_bf16(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                               unsigned n, unsigned h) {
    geglu_backward(x, dy, dx, n, h);
}
