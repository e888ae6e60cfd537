// CUDA C equivalent of kernels/squared_sum_v4.kir: partials[blockIdx.x] = sum of x[i]^2 over the
// quads this block visits (grid-stride over float4 loads, four accumulators), the n % 4 tail
// elements taken by global threads 0 .. n % 4 - 1; a butterfly within each warp, the warp sums
// through shared memory, one barrier, warp 0 sums them with the same butterfly. B a multiple of 32.
__device__ __forceinline__ float warp_sum(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 16));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 8));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 4));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 2));
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffff, v, 1));
    return v;
}

extern "C" __global__ void squared_sum_v4(const float* x, float* partials, unsigned n) {
    __shared__ float red[32];
    unsigned nt = blockDim.x;
    unsigned gid = blockIdx.x * nt + threadIdx.x;
    unsigned stride = nt * gridDim.x;
    unsigned quads = n >> 2;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    if (gid < (n & 3)) {
        float tv = x[(quads << 2) + gid];
        a0 = __fmul_rn(tv, tv);
    }
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (unsigned q = gid; q < quads; q += stride) {
        float4 v = x4[q];
        a0 = __fmaf_rn(v.x, v.x, a0);
        a1 = __fmaf_rn(v.y, v.y, a1);
        a2 = __fmaf_rn(v.z, v.z, a2);
        a3 = __fmaf_rn(v.w, v.w, a3);
    }
    float w = warp_sum(__fadd_rn(__fadd_rn(a0, a1), __fadd_rn(a2, a3)));
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[warp] = w;
    __syncthreads();
    if (warp == 0) {
        float g = lane < (nt >> 5) ? red[lane] : 0.0f;
        float total = warp_sum(g);
        if (lane == 0) partials[blockIdx.x] = total;
    }
}
