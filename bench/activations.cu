// CUDA C equivalents of kernels/relu_backward.kir, kernels/activations.kir (forward and backward)
// and the three elementwise kernels of kernels/graph_act_chain.kir (relu_deriv, mul, scale).
__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

extern "C" __global__ void relu_backward(const float* x, const float* dy, float* dx, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        float g = dy[i];
        dx[i] = xv > 0.0f ? g : 0.0f;
    }
}

extern "C" __global__ void gelu_backward(const float* x, const float* dy, float* dx, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        float g = dy[i];
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
        dx[i] = __fmul_rn(g, gp);
    }
}

extern "C" __global__ void silu_backward(const float* x, const float* dy, float* dx, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        float g = dy[i];
        float em = ex2_approx(__fmul_rn(xv, -1.442695f));
        float ep = ex2_approx(__fmul_rn(xv, 1.442695f));
        float s = __fdiv_rn(1.0f, __fadd_rn(em, 1.0f));
        float sb = __fdiv_rn(1.0f, __fadd_rn(ep, 1.0f));
        float xs = __fmul_rn(xv, s);
        float t2 = __fmul_rn(xs, sb);
        float gp = __fadd_rn(s, t2);
        dx[i] = __fmul_rn(g, gp);
    }
}

extern "C" __global__ void relu_forward(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        // not fmaxf (which maps NaN to 0): <= is false for NaN, so NaN passes through
        y[i] = xv <= 0.0f ? 0.0f : xv;
    }
}

extern "C" __global__ void gelu_forward(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        float x2 = __fmul_rn(xv, xv);
        float inner = __fmaf_rn(x2, 0.10294324f, 2.3022082f);
        float v = __fmul_rn(xv, inner);
        float e = ex2_approx(-v);
        float s = __fdiv_rn(1.0f, __fadd_rn(e, 1.0f));
        y[i] = __fmul_rn(xv, s);
    }
}

extern "C" __global__ void silu_forward(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        float e = ex2_approx(__fmul_rn(xv, -1.442695f));
        float s = __fdiv_rn(1.0f, __fadd_rn(e, 1.0f));
        y[i] = __fmul_rn(xv, s);
    }
}

// kernels/graph_act_chain.kir: the unfused launches of the @act_chain graph.
extern "C" __global__ void relu_deriv(const float* x, float* d, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xv = x[i];
        d[i] = xv > 0.0f ? 1.0f : 0.0f;
    }
}

extern "C" __global__ void mul(const float* a, const float* b, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __fmul_rn(a[i], b[i]);
}

extern "C" __global__ void scale(const float* a, float s, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __fmul_rn(a[i], s);
}
