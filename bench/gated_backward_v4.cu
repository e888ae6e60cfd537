// CUDA C equivalents of kernels/gated_backward_v4.kir: {glu, reglu, swiglu, geglu} backward x {f32,
// f16, bf16} with 16-byte accesses. Thread t takes the E dy elements E t .. E t + E - 1 (E = 4 for
// f32, 8 for f16/bf16): when h % E == 0 and they are a whole group below n, with one 16-byte load
// of a, b and dy each (float4; uint4 for 16-bit types, two elements per 32-bit word, the
// lower-numbered in the low half) and one 16-byte store of da and db each; otherwise one by one,
// as gated_backward.cu's kernels do. Launch grid(ceil(ceil(n / E) / B)) block(B); buffers 16-byte
// aligned. The math is gated_backward.cu's, op for op, in one __device__ function per activation.
//
// NVRTC 12.9 has no built-in cuda_fp16.h / cuda_bf16.h (see gated_backward.cu): the few pieces used
// are defined here under the headers' own names, with the headers' inline PTX.
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

// Two 16-bit elements of a 32-bit word to f32 and back. bf16 to f32 is exact: the bf16's bits in
// the high half of an f32 (what cvt.f32.bf16 gives for every input).
struct F16 {
    __device__ static float lo(unsigned w) {
        __half h;
        h.x = (unsigned short)w;
        return __half2float(h);
    }
    __device__ static float hi(unsigned w) {
        __half h;
        h.x = (unsigned short)(w >> 16);
        return __half2float(h);
    }
    __device__ static unsigned pack(float lo, float hi) {
        return (unsigned)__float2half_rn(lo).x | ((unsigned)__float2half_rn(hi).x << 16);
    }
};
struct BF16 {
    __device__ static float lo(unsigned w) { return __uint_as_float(w << 16); }
    __device__ static float hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
    __device__ static unsigned pack(float lo, float hi) {
        return (unsigned)__float2bfloat16_rn(lo).x | ((unsigned)__float2bfloat16_rn(hi).x << 16);
    }
};

// The arithmetic of gated_backward.cu's kernels, from the loaded values (as f32) to da and db.
struct Glu {
    __device__ static void f(float a, float b, float g, float& da, float& db) {
        float em = ex2_approx(__fmul_rn(b, -1.442695f));
        float ep = ex2_approx(__fmul_rn(b, 1.442695f));
        float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));   // sigma(b)
        float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));  // sigma(-b) = 1 - sigma(b)
        da = __fmul_rn(g, s);
        float ga = __fmul_rn(g, a);
        float ssb = __fmul_rn(s, sb);
        db = __fmul_rn(ga, ssb);
    }
};
struct Reglu {
    __device__ static void f(float a, float b, float g, float& da, float& db) {
        bool pos = b > 0.0f;
        float gb = __fmul_rn(g, b);
        float ga = __fmul_rn(g, a);
        da = pos ? gb : 0.0f;
        db = pos ? ga : 0.0f;
    }
};
struct Swiglu {
    __device__ static void f(float a, float b, float g, float& da, float& db) {
        float em = ex2_approx(__fmul_rn(b, -1.442695f));
        float ep = ex2_approx(__fmul_rn(b, 1.442695f));
        float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));   // sigma(b)
        float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));  // sigma(-b)
        float bs = __fmul_rn(b, s);                        // silu(b)
        da = __fmul_rn(g, bs);
        float ga = __fmul_rn(g, a);
        float d = __fmaf_rn(bs, sb, s);                    // silu'(b) = s + b s (1 - s)
        db = __fmul_rn(ga, d);
    }
};
struct Geglu {
    __device__ static void f(float a, float b, float g, float& da, float& db) {
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
        da = __fmul_rn(g, bPhi);
        float ga = __fmul_rn(g, a);
        float d = __fmaf_rn(b, phi, Phi);
        db = __fmul_rn(ga, d);
    }
};

// Elements j0 .. min(j0 + count, n) - 1 one by one, as the scalar kernels compute each.
template <class K, typename T>
__device__ __forceinline__ void one_by_one(const T* x, const T* dy, T* dx, unsigned n, unsigned h, unsigned j0,
                                           unsigned count) {
    unsigned jend = min(j0 + count, n);
    for (unsigned j = j0; j < jend; j++) {
        unsigned row = j / h;
        unsigned ia = row * h + j;  // row * 2h + col
        unsigned ib = ia + h;
        float da, db;
        K::f(ld(x, ia), ld(x, ib), ld(dy, j), da, db);
        st(dx, ia, da);
        st(dx, ib, db);
    }
}

template <class K>
__device__ __forceinline__ void backward_f32_v4(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if ((h & 3) == 0 && t < (n >> 2)) {
        unsigned i = t << 2;
        unsigned row = i / h;
        unsigned ia = row * h + i;  // row * 2h + col
        unsigned ib = ia + h;
        float4 a = *reinterpret_cast<const float4*>(x + ia);
        float4 b = *reinterpret_cast<const float4*>(x + ib);
        float4 g = *reinterpret_cast<const float4*>(dy + i);
        float4 da, db;
        K::f(a.x, b.x, g.x, da.x, db.x);
        K::f(a.y, b.y, g.y, da.y, db.y);
        K::f(a.z, b.z, g.z, da.z, db.z);
        K::f(a.w, b.w, g.w, da.w, db.w);
        *reinterpret_cast<float4*>(dx + ia) = da;
        *reinterpret_cast<float4*>(dx + ib) = db;
    } else {
        one_by_one<K>(x, dy, dx, n, h, t << 2, 4);
    }
}

// One 32-bit word of a, b and dy (two elements each) to the words of da and db.
template <class K, class C>
__device__ __forceinline__ void word(unsigned aw, unsigned bw, unsigned gw, unsigned& daw, unsigned& dbw) {
    float da0, db0, da1, db1;
    K::f(C::lo(aw), C::lo(bw), C::lo(gw), da0, db0);
    K::f(C::hi(aw), C::hi(bw), C::hi(gw), da1, db1);
    daw = C::pack(da0, da1);
    dbw = C::pack(db0, db1);
}

template <class K, class C, typename T>
__device__ __forceinline__ void backward_16_v4(const T* x, const T* dy, T* dx, unsigned n, unsigned h) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if ((h & 7) == 0 && t < (n >> 3)) {
        unsigned i = t << 3;
        unsigned row = i / h;
        unsigned ia = row * h + i;  // row * 2h + col
        unsigned ib = ia + h;
        uint4 a = *reinterpret_cast<const uint4*>(x + ia);
        uint4 b = *reinterpret_cast<const uint4*>(x + ib);
        uint4 g = *reinterpret_cast<const uint4*>(dy + i);
        uint4 da, db;
        word<K, C>(a.x, b.x, g.x, da.x, db.x);
        word<K, C>(a.y, b.y, g.y, da.y, db.y);
        word<K, C>(a.z, b.z, g.z, da.z, db.z);
        word<K, C>(a.w, b.w, g.w, da.w, db.w);
        *reinterpret_cast<uint4*>(dx + ia) = da;
        *reinterpret_cast<uint4*>(dx + ib) = db;
    } else {
        one_by_one<K>(x, dy, dx, n, h, t << 3, 8);
    }
}

extern "C" __global__ void glu_backward_f32_v4(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    backward_f32_v4<Glu>(x, dy, dx, n, h);
}
extern "C" __global__ void glu_backward_f16_v4(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    backward_16_v4<Glu, F16>(x, dy, dx, n, h);
}
extern "C" __global__ void glu_backward_bf16_v4(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                                unsigned n, unsigned h) {
    backward_16_v4<Glu, BF16>(x, dy, dx, n, h);
}

extern "C" __global__ void reglu_backward_f32_v4(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    backward_f32_v4<Reglu>(x, dy, dx, n, h);
}
extern "C" __global__ void reglu_backward_f16_v4(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    backward_16_v4<Reglu, F16>(x, dy, dx, n, h);
}
extern "C" __global__ void reglu_backward_bf16_v4(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                                unsigned n, unsigned h) {
    backward_16_v4<Reglu, BF16>(x, dy, dx, n, h);
}

extern "C" __global__ void swiglu_backward_f32_v4(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    backward_f32_v4<Swiglu>(x, dy, dx, n, h);
}
extern "C" __global__ void swiglu_backward_f16_v4(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    backward_16_v4<Swiglu, F16>(x, dy, dx, n, h);
}
extern "C" __global__ void swiglu_backward_bf16_v4(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                                unsigned n, unsigned h) {
    backward_16_v4<Swiglu, BF16>(x, dy, dx, n, h);
}

extern "C" __global__ void geglu_backward_f32_v4(const float* x, const float* dy, float* dx, unsigned n, unsigned h) {
    backward_f32_v4<Geglu>(x, dy, dx, n, h);
}
extern "C" __global__ void geglu_backward_f16_v4(const __half* x, const __half* dy, __half* dx, unsigned n, unsigned h) {
    backward_16_v4<Geglu, F16>(x, dy, dx, n, h);
}
extern "C" __global__ void geglu_backward_bf16_v4(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                                unsigned n, unsigned h) {
    backward_16_v4<Geglu, BF16>(x, dy, dx, n, h);
}
