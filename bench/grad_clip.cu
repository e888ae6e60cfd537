// CUDA C equivalents of kernels/grad_clip.kir.
extern "C" __global__ void squared_sum(const float* x, float* partials, unsigned n) {
    __shared__ float red[1024];
    unsigned tid = threadIdx.x, nt = blockDim.x;
    unsigned stride = nt * gridDim.x;
    float acc = 0.0f;
    for (unsigned i = blockIdx.x * nt + tid; i < n; i += stride) {
        float v = x[i];
        acc = __fmaf_rn(v, v, acc);
    }
    red[tid] = acc;
    __syncthreads();
    for (unsigned s = 512; s != 0; s >>= 1) {
        unsigned j = tid + s;
        if (tid < s && j < nt) red[tid] = __fadd_rn(red[tid], red[j]);
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = red[0];
}

extern "C" __global__ void clip_scale_reduce(const float* partials, unsigned total_n, float max_norm, float* out) {
    __shared__ float red[1024];
    unsigned tid = threadIdx.x, nt = blockDim.x;
    float acc = 0.0f;
    for (unsigned i = tid; i < total_n; i += nt) acc = __fadd_rn(acc, partials[i]);
    red[tid] = acc;
    __syncthreads();
    for (unsigned s = 512; s != 0; s >>= 1) {
        unsigned j = tid + s;
        if (tid < s && j < nt) red[tid] = __fadd_rn(red[tid], red[j]);
        __syncthreads();
    }
    if (tid == 0) {
        float sum = red[0];
        float norm = __fsqrt_rn(sum);
        float ratio = __fdiv_rn(max_norm, norm);
        float clipped = fminf(ratio, 1.0f);
        out[0] = norm > 0.0f ? clipped : 1.0f;
        out[1] = norm;
    }
}

extern "C" __global__ void gradient_clip_gpu_scale(float* grads, const float* scale, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float sc = scale[0];
        float ad = fabsf(__fsub_rn(sc, 1.0f));
        if (!(ad < 1e-7f)) grads[i] = __fmul_rn(grads[i], sc);
    }
}
