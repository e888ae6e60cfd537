//! The one emulated device: its name, compute capability, limits and every `CUdevice_attribute`.
//!
//! Guarantees: the device is named [`DEVICE_NAME`] so nobody mistakes it for hardware; it reports
//! compute capability 9.0, 1024 threads per block (x, y ≤ 1024, z ≤ 64), warp size 32, 48 KiB of
//! shared memory per block (227 KiB with the opt-in attribute, as the emulator allows), and the
//! limits the launch checks in [`crate::driver`] enforce are these same numbers. Features the
//! emulator does not have (textures, surfaces, managed memory, cooperative launch, clusters, unified
//! addressing, copy engines) report 0. Every attribute number CUDA 12.8 defines has a value;
//! others are `None` (the driver returns `CUDA_ERROR_INVALID_VALUE` for them, as the real one does).

use std::ffi::c_int;

/// `cuDeviceGetName`.
pub const DEVICE_NAME: &str = "kir-ptx-emu (sm_90, CPU)";
/// `cuDriverGetVersion`: CUDA 12.8.
pub const DRIVER_VERSION: c_int = 12080;
/// `cuDeviceGetUuid`: fixed, and spelled so it is recognisable.
pub const UUID: [u8; 16] = *b"kir-ptx-emu-sm90";
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
pub const MAX_BLOCK_DIM: [u32; 3] = [1024, 1024, 64];
pub const MAX_GRID_DIM: [u32; 3] = [i32::MAX as u32, 65535, 65535];
/// Shared memory per block without opting in (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
pub const SHARED_PER_BLOCK: u32 = 48 * 1024;
/// Shared memory per block with the opt-in (the emulator's limit, as on sm_90).
pub const SHARED_PER_BLOCK_OPTIN: u32 = kir_ptx_emu::MAX_SHARED_BYTES;
/// Fallback for the device's memory when the host's cannot be read.
const DEFAULT_TOTAL_MEM: u64 = 16 << 30;

/// Device memory is host memory: the device reports the host's physical memory.
pub fn total_mem() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        })
        .unwrap_or(DEFAULT_TOTAL_MEM)
}

/// Host threads that run blocks (`MULTIPROCESSOR_COUNT`).
fn host_threads() -> c_int {
    std::thread::available_parallelism().map(|n| n.get().min(1024) as c_int).unwrap_or(1)
}

/// The value of device attribute `attr` (`CUdevice_attribute`), `None` for numbers CUDA 12.8 does
/// not define.
pub fn attribute(attr: c_int) -> Option<c_int> {
    let v = match attr {
        1 => MAX_THREADS_PER_BLOCK as c_int,
        2 => MAX_BLOCK_DIM[0] as c_int,
        3 => MAX_BLOCK_DIM[1] as c_int,
        4 => MAX_BLOCK_DIM[2] as c_int,
        5 => MAX_GRID_DIM[0] as c_int,
        6 => MAX_GRID_DIM[1] as c_int,
        7 => MAX_GRID_DIM[2] as c_int,
        8 => SHARED_PER_BLOCK as c_int,
        9 => 65536,             // TOTAL_CONSTANT_MEMORY
        10 => 32,               // WARP_SIZE
        11 => i32::MAX,         // MAX_PITCH
        12 => 65536,            // MAX_REGISTERS_PER_BLOCK
        13 => 1_000_000,        // CLOCK_RATE (kHz)
        14 => 512,              // TEXTURE_ALIGNMENT
        15 => 0,                // GPU_OVERLAP: copies and kernels never overlap
        16 => host_threads(),   // MULTIPROCESSOR_COUNT
        17 => 0,                // KERNEL_EXEC_TIMEOUT (the emulator's fuel limit is not a watchdog)
        18 => 0,                // INTEGRATED
        19 => 0,                // CAN_MAP_HOST_MEMORY
        20 => 0,                // COMPUTE_MODE: default
        21..=29 => 0,           // textures: not emulated
        30 => 512,              // SURFACE_ALIGNMENT
        31 => 0,                // CONCURRENT_KERNELS: launches run one at a time
        32 => 0,                // ECC_ENABLED
        33..=35 => 0,           // PCI bus/device id, TCC driver
        36 => 1_000_000,        // MEMORY_CLOCK_RATE (kHz)
        37 => 64,               // GLOBAL_MEMORY_BUS_WIDTH
        38 => 50 * 1024 * 1024, // L2_CACHE_SIZE
        39 => 2048,             // MAX_THREADS_PER_MULTIPROCESSOR
        40 => 0,                // ASYNC_ENGINE_COUNT
        41 => 0,                // UNIFIED_ADDRESSING: host pointers are not device pointers
        42..=49 => 0,           // textures
        50 => 0,                // PCI_DOMAIN_ID
        51 => 32,               // TEXTURE_PITCH_ALIGNMENT
        52..=74 => 0,           // textures and surfaces
        75 => 9,                // COMPUTE_CAPABILITY_MAJOR
        76 => 0,                // COMPUTE_CAPABILITY_MINOR
        77 => 0,                // MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH
        78 => 1,                // STREAM_PRIORITIES_SUPPORTED
        79 | 80 => 1,           // GLOBAL/LOCAL_L1_CACHE_SUPPORTED
        81 => 228 * 1024,       // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        82 => 65536,            // MAX_REGISTERS_PER_MULTIPROCESSOR
        83 => 0,                // MANAGED_MEMORY
        84 | 85 => 0,           // MULTI_GPU_BOARD(_GROUP_ID)
        86 => 0,                // HOST_NATIVE_ATOMIC_SUPPORTED
        87 => 2,                // SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
        88..=94 => 0,           // pageable/managed access, preemption, stream memory ops
        95 | 96 => 0,           // COOPERATIVE_LAUNCH (and multi-device)
        97 => SHARED_PER_BLOCK_OPTIN as c_int,
        98..=105 => 0,  // remote writes, host registration, VMM, IPC handle types
        106 => 32,      // MAX_BLOCKS_PER_MULTIPROCESSOR
        107..=110 => 0, // compression, persisting L2, access policy window, RDMA with VMM
        111 => 1024,    // RESERVED_SHARED_MEMORY_PER_BLOCK
        112..=114 => 0, // sparse arrays, read-only host registration, semaphores
        115 => 1,       // MEMORY_POOLS_SUPPORTED: cuMemAllocAsync/cuMemFreeAsync work
        116..=119 => 0, // RDMA, pool handle types
        120 => 0,       // CLUSTER_LAUNCH
        121..=125 => 0, // deferred mapping, 64-bit stream ops, dma-buf, IPC events
        126 => 1,       // MEM_SYNC_DOMAIN_COUNT
        127..=129 => 0, // tensor maps, fabric handles, unified function pointers
        130 => 0,       // NUMA_CONFIG: none
        131 => -1,      // NUMA_ID
        132 | 133 => 0, // multicast, MPS
        134 => -1,      // HOST_NUMA_ID
        135..=137 => 0, // D3D12 CIG, decompression
        139 | 140 => 0, // GPU PCI device/subsystem id
        143 => 0,       // HOST_NUMA_MULTINODE_IPC_SUPPORTED
        _ => return None,
    };
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attributes_kir_reads_are_an_sm90_device() {
        assert_eq!((attribute(75), attribute(76)), (Some(9), Some(0)));
        assert_eq!(attribute(1), Some(1024));
        assert_eq!(attribute(10), Some(32));
        assert_eq!(attribute(8), Some(48 * 1024));
        assert_eq!(attribute(97), Some(227 * 1024));
        assert_eq!(attribute(115), Some(1));
        assert!(attribute(16).unwrap() >= 1);
        assert_eq!(attribute(0), None);
        assert_eq!(attribute(138), None);
        assert_eq!(attribute(144), None);
        assert_eq!(attribute(-1), None);
        for a in 1..=137 {
            assert!(attribute(a).is_some(), "attribute {a}");
        }
        assert!(total_mem() > 0);
    }
}
