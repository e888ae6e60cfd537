// CUDA C equivalents of kernels/gemm_bwd.kir: GEMM + bias + activation backward, f32, row-major
// A [m, k], B [k, n], bias [n], grad [m, n]. Dot products are fma chains in index order.
__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

// grad_pre[i, j] = grad[i, j] * act'(sum_l a[i, l] b[l, j] + bias[j]); act: 0 none, 1 ReLU, 2 GELU
// (tanh approximation, |x| clamped to 1e4), 3 SiLU, 4 sigmoid, 5 tanh, anything else NaN.
extern "C" __global__ void gemm_bias_act_bwd_grad_pre(const float* grad, const float* a, const float* b,
                                                      const float* bias, float* grad_pre, unsigned m, unsigned n,
                                                      unsigned k, unsigned act) {
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned mn = m * n;
    if (idx < mn) {
        unsigned i = idx / n;
        unsigned j = idx % n;
        unsigned arow = i * k;
        float acc = 0.0f;
        for (unsigned l = 0; l < k; l++) acc = __fmaf_rn(a[arow + l], b[l * n + j], acc);
        float pre = __fadd_rn(acc, bias[j]);
        float g = grad[idx];
        float d;
        if (act == 0) {
            d = 1.0f;
        } else if (act == 1) {
            d = pre > 0.0f ? 1.0f : 0.0f;
        } else if (act == 2) {
            float ax = fabsf(pre);
            float lim = pre > 0.0f ? 10000.0f : -10000.0f;
            float xc = ax > 10000.0f ? lim : pre;
            float x2 = __fmul_rn(xc, xc);
            float inner = __fmaf_rn(x2, 0.10294324f, 2.3022082f);
            float v = __fmul_rn(xc, inner);  // 2u log2(e)
            float em = ex2_approx(-v);
            float ep = ex2_approx(v);
            float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));
            float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));
            float du2 = __fmaf_rn(x2, 0.21406445f, 1.5957692f);
            float ssb = __fmul_rn(s, sb);
            float xdu = __fmul_rn(xc, du2);
            d = __fadd_rn(s, __fmul_rn(xdu, ssb));
        } else if (act == 3) {
            float em = ex2_approx(__fmul_rn(pre, -1.442695f));
            float ep = ex2_approx(__fmul_rn(pre, 1.442695f));
            float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));
            float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));
            float xs = __fmul_rn(pre, s);
            d = __fadd_rn(s, __fmul_rn(xs, sb));
        } else if (act == 4) {
            float em = ex2_approx(__fmul_rn(pre, -1.442695f));
            float ep = ex2_approx(__fmul_rn(pre, 1.442695f));
            float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));
            float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));
            d = __fmul_rn(s, sb);
        } else if (act == 5) {
            float pre2 = __fadd_rn(pre, pre);
            float em = ex2_approx(__fmul_rn(pre2, -1.442695f));
            float ep = ex2_approx(__fmul_rn(pre2, 1.442695f));
            float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));
            float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));
            d = __fmul_rn(__fmul_rn(s, sb), 4.0f);
        } else {
            d = __int_as_float(0x7fffffff);  // kir's canonical NaN
        }
        grad_pre[idx] = __fmul_rn(g, d);
    }
}

// d_a[i, l] = sum_j grad_pre[i, j] b[l, j]
extern "C" __global__ void gemm_bwd_da(const float* grad_pre, const float* b, float* d_a, unsigned m, unsigned n,
                                       unsigned k) {
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned total = m * k;
    if (idx < total) {
        unsigned i = idx / k;
        unsigned l = idx % k;
        unsigned grow = i * n;
        unsigned brow = l * n;
        float acc = 0.0f;
        for (unsigned t = 0; t < n; t++) acc = __fmaf_rn(grad_pre[grow + t], b[brow + t], acc);
        d_a[idx] = acc;
    }
}

extern "C" __global__ void gemm_bwd_da_accum(const float* grad_pre, const float* b, float* d_a, unsigned m,
                                             unsigned n, unsigned k) {
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned total = m * k;
    if (idx < total) {
        unsigned i = idx / k;
        unsigned l = idx % k;
        unsigned grow = i * n;
        unsigned brow = l * n;
        float acc = 0.0f;
        for (unsigned t = 0; t < n; t++) acc = __fmaf_rn(grad_pre[grow + t], b[brow + t], acc);
        d_a[idx] = __fadd_rn(d_a[idx], acc);
    }
}

// d_b[l, j] = sum_i a[i, l] grad_pre[i, j]
extern "C" __global__ void gemm_bwd_db(const float* a, const float* grad_pre, float* d_b, unsigned m, unsigned n,
                                       unsigned k) {
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned total = k * n;
    if (idx < total) {
        unsigned l = idx / n;
        unsigned j = idx % n;
        float acc = 0.0f;
        for (unsigned t = 0; t < m; t++) acc = __fmaf_rn(a[t * k + l], grad_pre[t * n + j], acc);
        d_b[idx] = acc;
    }
}

extern "C" __global__ void gemm_bwd_db_accum(const float* a, const float* grad_pre, float* d_b, unsigned m,
                                             unsigned n, unsigned k) {
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned total = k * n;
    if (idx < total) {
        unsigned l = idx / n;
        unsigned j = idx % n;
        float acc = 0.0f;
        for (unsigned t = 0; t < m; t++) acc = __fmaf_rn(a[t * k + l], grad_pre[t * n + j], acc);
        d_b[idx] = __fadd_rn(d_b[idx], acc);
    }
}

// d_bias[j] = sum_i grad_pre[i, j]
extern "C" __global__ void gemm_bwd_dbias(const float* grad_pre, float* d_bias, unsigned m, unsigned n) {
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        float acc = 0.0f;
        for (unsigned i = 0; i < m; i++) acc = __fadd_rn(acc, grad_pre[i * n + j]);
        d_bias[j] = acc;
    }
}

extern "C" __global__ void gemm_bwd_dbias_accum(const float* grad_pre, float* d_bias, unsigned m, unsigned n) {
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) {
        float acc = 0.0f;
        for (unsigned i = 0; i < m; i++) acc = __fadd_rn(acc, grad_pre[i * n + j]);
        d_bias[j] = __fadd_rn(d_bias[j], acc);
    }
}
