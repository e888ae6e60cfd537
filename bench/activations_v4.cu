// CUDA C equivalents of kernels/activations_v4.kir: relu/gelu/silu forward and gelu/silu backward
// with float4 (16-byte) loads and stores, four elements per thread, the n % 4 tail taken by thread
// n / 4 with scalar accesses. Launch grid(ceil(ceil(n / 4) / B)) block(B); buffers 16-byte aligned.
// The per-element math is activations.cu's, op for op (exactly rounded intrinsics, inline
// ex2.approx.f32), in one __device__ function per kernel.
__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ float relu_forward_elem(float xv) {
    // not fmaxf (which maps NaN to 0): <= is false for NaN, so NaN passes through
    return xv <= 0.0f ? 0.0f : xv;
}

__device__ __forceinline__ float gelu_forward_elem(float xv) {
    float x2 = __fmul_rn(xv, xv);
    float inner = __fmaf_rn(x2, 0.10294324f, 2.3022082f);
    float v = __fmul_rn(xv, inner);
    float e = ex2_approx(-v);
    float s = __fdiv_rn(1.0f, __fadd_rn(e, 1.0f));
    return __fmul_rn(xv, s);
}

__device__ __forceinline__ float gelu_backward_elem(float xv, float g) {
    float ax = fabsf(xv);
    float lim = xv > 0.0f ? 10000.0f : -10000.0f;
    float xc = ax > 10000.0f ? lim : xv;
    float x2 = __fmul_rn(xc, xc);
    float inner = __fmaf_rn(x2, 0.10294324f, 2.3022082f);
    float v = __fmul_rn(xc, inner);
    float em = ex2_approx(-v);
    float ep = ex2_approx(v);
    float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));
    float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));
    float du2 = __fmaf_rn(x2, 0.21406445f, 1.5957692f);
    float ssb = __fmul_rn(s, sb);
    float xdu = __fmul_rn(xc, du2);
    float t2 = __fmul_rn(xdu, ssb);
    float gp = __fadd_rn(s, t2);
    return __fmul_rn(g, gp);
}

__device__ __forceinline__ float silu_forward_elem(float xv) {
    float e = ex2_approx(__fmul_rn(xv, -1.442695f));
    float s = __fdiv_rn(1.0f, __fadd_rn(e, 1.0f));
    return __fmul_rn(xv, s);
}

__device__ __forceinline__ float silu_backward_elem(float xv, float g) {
    float em = ex2_approx(__fmul_rn(xv, -1.442695f));
    float ep = ex2_approx(__fmul_rn(xv, 1.442695f));
    float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));
    float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));
    float xs = __fmul_rn(xv, s);
    float t2 = __fmul_rn(xs, sb);
    float gp = __fadd_rn(s, t2);
    return __fmul_rn(g, gp);
}

#define FORWARD_V4(NAME)                                                                     \
    extern "C" __global__ void NAME##_v4(const float* x, float* y, unsigned n) {             \
        unsigned t = blockIdx.x * blockDim.x + threadIdx.x;                                  \
        unsigned quads = n >> 2;                                                             \
        if (t < quads) {                                                                     \
            float4 xv = reinterpret_cast<const float4*>(x)[t];                               \
            float4 r;                                                                        \
            r.x = NAME##_elem(xv.x);                                                         \
            r.y = NAME##_elem(xv.y);                                                         \
            r.z = NAME##_elem(xv.z);                                                         \
            r.w = NAME##_elem(xv.w);                                                         \
            reinterpret_cast<float4*>(y)[t] = r;                                             \
        } else if (t == quads) {                                                             \
            /* the thread right after the last quad takes the n % 4 remaining elements */   \
            for (unsigned j = quads << 2; j < n; j++) y[j] = NAME##_elem(x[j]);              \
        }                                                                                    \
    }

#define BACKWARD_V4(NAME)                                                                            \
    extern "C" __global__ void NAME##_v4(const float* x, const float* dy, float* dx, unsigned n) {  \
        unsigned t = blockIdx.x * blockDim.x + threadIdx.x;                                          \
        unsigned quads = n >> 2;                                                                     \
        if (t < quads) {                                                                             \
            float4 xv = reinterpret_cast<const float4*>(x)[t];                                       \
            float4 g = reinterpret_cast<const float4*>(dy)[t];                                       \
            float4 r;                                                                                \
            r.x = NAME##_elem(xv.x, g.x);                                                            \
            r.y = NAME##_elem(xv.y, g.y);                                                            \
            r.z = NAME##_elem(xv.z, g.z);                                                            \
            r.w = NAME##_elem(xv.w, g.w);                                                            \
            reinterpret_cast<float4*>(dx)[t] = r;                                                    \
        } else if (t == quads) {                                                                     \
            for (unsigned j = quads << 2; j < n; j++) dx[j] = NAME##_elem(x[j], dy[j]);              \
        }                                                                                            \
    }

FORWARD_V4(relu_forward)
FORWARD_V4(gelu_forward)
FORWARD_V4(silu_forward)
BACKWARD_V4(gelu_backward)
BACKWARD_V4(silu_backward)
