//! Process-wide memory policy for programs that run kernels repeatedly, and fallible
//! allocation of tensor storage.
//!
//! Storage sizes come from user data (a dimension of 2^40 in a file), so packing computes
//! them with checked arithmetic and refuses, as an error naming the bytes, any that
//! overflows, exceeds the memory available (`MemAvailable` plus free swap) or that the
//! allocator declines, rather than aborting the process.
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

/// Allocations at least this large are compared with the memory the system has available
/// before they are made: on Linux a huge request usually succeeds (memory is overcommitted)
/// and the process is killed while filling it, or it pages for minutes. Smaller ones are
/// only reserved fallibly, so that checking costs nothing on the common path.
const CHECKED_ABOVE: usize = 1 << 30;

/// Memory the system can give this process now: `MemAvailable` plus free swap, from
/// `/proc/meminfo`. `None` where that cannot be read (then only the allocator decides).
fn available_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| -> Option<usize> {
        let line = info.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    let total = kib("MemAvailable:")?.saturating_add(kib("SwapFree:").unwrap_or(0));
    Some(total.saturating_mul(1024))
}

/// `count * size_of::<T>()` bytes, or an error saying what needs how much: `None` for
/// `count` is a size that overflowed before it got here.
pub(crate) fn bytes_for<T>(
    count: Option<usize>,
    what: &dyn Fn() -> String,
) -> Result<usize, String> {
    let element = std::mem::size_of::<T>();
    let bytes = count.and_then(|n| n.checked_mul(element));
    let Some(bytes) = bytes else {
        return Err(format!(
            "{} needs more than {} bytes, beyond the address space",
            what(),
            usize::MAX
        ));
    };
    if bytes >= CHECKED_ABOVE {
        if let Some(available) = available_bytes() {
            if bytes > available {
                return Err(format!(
                    "{} needs {bytes} bytes, more than the {available} bytes of memory available",
                    what()
                ));
            }
        }
    }
    Ok(bytes)
}

/// Grow `v` to `len` elements filled with `fill` (a large buffer asking for huge pages,
/// [`with_huge_pages`]), refusing (with what needs how many
/// bytes) a size that cannot be allocated instead of aborting the process.
pub(crate) fn resize<T: Clone>(
    v: &mut Vec<T>,
    len: Option<usize>,
    fill: T,
    what: &dyn Fn() -> String,
) -> Result<(), String> {
    let bytes = bytes_for::<T>(len, what)?;
    let len = len.expect("bytes_for refuses an overflowed length");
    v.try_reserve_exact(len.saturating_sub(v.len()))
        .map_err(|_| format!("{} needs {bytes} bytes, which cannot be allocated", what()))?;
    advise_huge_pages(v);
    v.resize(len, fill);
    Ok(())
}

/// An empty vector with room for exactly `len` elements, or an error as for [`resize`]:
/// for a buffer that other code fills through its pointer before setting its length.
pub(crate) fn reserved<T>(len: usize, what: &dyn Fn() -> String) -> Result<Vec<T>, String> {
    let bytes = bytes_for::<T>(Some(len), what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| format!("{} needs {bytes} bytes, which cannot be allocated", what()))?;
    Ok(v)
}

/// A vector of `len` copies of `fill`, or an error as for [`resize`].
pub(crate) fn filled<T: Clone>(
    len: Option<usize>,
    fill: T,
    what: &dyn Fn() -> String,
) -> Result<Vec<T>, String> {
    let mut v = Vec::new();
    resize(&mut v, len, fill, what)?;
    Ok(v)
}

/// Buffers from this many bytes ask for huge pages ([`with_huge_pages`]), as NumPy's do.
const HUGE_PAGES_FROM: usize = 4 << 20;

/// A vector of `len` copies of `fill` whose buffer asks the system, before it is first
/// touched, for transparent huge pages (Linux, where they are given on request: the
/// `madvise` mode). An array of many megabytes read or written at random otherwise misses
/// the TLB at nearly every access. Elsewhere, and for small buffers, a plain vector.
pub(crate) fn with_huge_pages<T: Clone>(len: usize, fill: T) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    advise_huge_pages(&mut v);
    v.resize(len, fill);
    v
}

/// Ask for huge pages for the buffer of `v` (see [`with_huge_pages`]); pages its elements
/// already occupy keep theirs.
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
fn advise_huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
        if bytes >= HUGE_PAGES_FROM {
            const PAGE: usize = 4096;
            let start = (v.as_mut_ptr() as usize).next_multiple_of(PAGE);
            let end = (v.as_mut_ptr() as usize + bytes) / PAGE * PAGE;
            // SAFETY: the range lies within the vector's own allocation; the advice
            // changes only how its pages are backed, never their contents. Refusal is
            // harmless.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}
