// CUDA C equivalent of kernels/softmax.kir: row softmax, f32, one block per row, B a multiple of 32.
__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

extern "C" __global__ void softmax_rows(const float* x, float* y, unsigned rows, unsigned cols) {
    __shared__ float red[32];
    unsigned row = blockIdx.x;
    if (row < rows) {  // block-uniform
        unsigned tid = threadIdx.x, nt = blockDim.x;
        unsigned lane = tid & 31, warp = tid >> 5, nwarps = nt >> 5;
        unsigned base = row * cols;
        bool lane0 = lane == 0;
        const float ninf = __int_as_float(0xff800000);
        // max: per thread, butterfly within the warp, then over the warp maxima
        float m = ninf;
        for (unsigned j = tid; j < cols; j += nt) m = fmaxf(m, x[base + j]);
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 16));
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 8));
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 4));
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 2));
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, 1));
        if (lane0) red[warp] = m;
        __syncthreads();
        float bm = ninf;
        for (unsigned w = 0; w < nwarps; w++) bm = fmaxf(bm, red[w]);
        // every thread has read the maxima before any warp writes its sum into the same slots
        __syncthreads();
        // sum of e_j = 2^((x_j - max) log2 e), e_j kept in y
        float acc = 0.0f;
        for (unsigned k = tid; k < cols; k += nt) {
            unsigned se = base + k;
            float ev = ex2_approx(__fmul_rn(__fsub_rn(x[se], bm), 1.442695f));
            y[se] = ev;
            acc = __fadd_rn(acc, ev);
        }
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffff, acc, 16));
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffff, acc, 8));
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffff, acc, 4));
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffff, acc, 2));
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffff, acc, 1));
        if (lane0) red[warp] = acc;
        __syncthreads();
        float bsum = 0.0f;
        for (unsigned v = 0; v < nwarps; v++) bsum = __fadd_rn(bsum, red[v]);
        for (unsigned q = tid; q < cols; q += nt) {
            unsigned oe = base + q;
            y[oe] = __fdiv_rn(y[oe], bsum);
        }
    }
}
