//! Process-wide memory policy for programs that run kernels repeatedly.
//!
//! Assembling a sparse output allocates and frees arrays as large as the output on every
//! run. glibc hands freed blocks of that size back to the operating system (`munmap`, or
//! trimming the heap top), so the next run faults every page in again, zero-filled by the
//! kernel: on a 1M-entry SpGEMM result (cage10 squared) assembly took 50 ms with the
//! faults and 28 ms without; on an 11M-entry one (c-46 squared), 426 ms and 273 ms. Keeping
//! freed memory in the process removes the faults; it costs resident memory up to the
//! largest working set the process has had, which is what a program that runs the same
//! kernels in a loop wants.

/// Keep freed memory in the process for reuse instead of returning it to the system.
/// Call once, early (the `sparsec` command does). Only glibc on Linux is tuned; elsewhere
/// this does nothing. Returns whether the policy was applied.
///
/// ```
/// sparsec::memory::retain_freed_memory();
/// ```
pub fn retain_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // Every block comes from the heap (blocks above glibc's mmap threshold, at most
        // 32 MiB, would otherwise be mapped and unmapped each time), whose top is never
        // trimmed and grows in steps of 256 MiB of address space (pages become resident
        // only when used; smaller steps left many runs faulting). glibc still maps memory
        // when the heap cannot grow.
        const TOP_PAD: libc::c_int = 256 << 20;
        // SAFETY: mallopt only changes allocator parameters; it is thread-safe.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1
                && libc::mallopt(libc::M_TOP_PAD, TOP_PAD) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}
