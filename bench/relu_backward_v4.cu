// CUDA C equivalent of kernels/relu_backward_v4.kir: dx[i] = x[i] > 0 ? dy[i] : 0, four elements
// per thread with float4 (16-byte) loads and stores, the n % 4 tail taken by thread n / 4 with
// scalar accesses. Launch grid(ceil(ceil(n / 4) / B)) block(B); x, dy, dx 16-byte aligned.
extern "C" __global__ void relu_backward_v4(const float* x, const float* dy, float* dx, unsigned n) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned quads = n >> 2;
    if (t < quads) {
        float4 xv = reinterpret_cast<const float4*>(x)[t];
        float4 g = reinterpret_cast<const float4*>(dy)[t];
        float4 r;
        r.x = xv.x > 0.0f ? g.x : 0.0f;
        r.y = xv.y > 0.0f ? g.y : 0.0f;
        r.z = xv.z > 0.0f ? g.z : 0.0f;
        r.w = xv.w > 0.0f ? g.w : 0.0f;
        reinterpret_cast<float4*>(dx)[t] = r;
    } else if (t == quads) {
        // the thread right after the last quad takes the n % 4 remaining elements
        for (unsigned j = quads << 2; j < n; j++) {
            float xs = x[j];
            float gs = dy[j];
            dx[j] = xs > 0.0f ? gs : 0.0f;
        }
    }
}
